print("analytics-host")
