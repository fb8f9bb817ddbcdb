// The Swift side of the C ABI for integrations written in Swift (ABI issue).
