/// The two event generators of the Analytics Live README (trackScreens, trackAddToCart),
/// verbatim: the signals tests and the signals benchmark run the bundle users start from.
public enum SeedSignalGenerators {
    public static let source = """
        function processSignal(signal) {
           trackScreens(signal)
           trackAddToCart(signal)
        }

        function trackScreens(signal) {
           if (signal.type === SignalType.Navigation && signal.data.action === NavigationAction.Entering) {
               analytics.screen("Screen Viewed", null, {
                   "screenName": signal.data.screen
               })
           }
        }

        function trackAddToCart(signal) {
           // Check for "Add To Cart" button tap
           if (signal.type === SignalType.Interaction && signal.data.title === "Add To Cart") {
               let properties = {}

               // Look for recent product network response
               const network = signals.find(signal, SignalType.Network, (s) => {
                   return (s.data.action === NetworkAction.Response && s.data.url.includes("product"))
               })

               // Enrich event with product data
               if (network) {
                   properties.price = network.data.data.content.price
                   properties.currency = network.data.data.content.currency ?? "USD"
                   properties.productId = network.data.data.content.id
                   properties.productName = network.data.data.content.title
               }

               // Send enriched track event
               analytics.track("Add To Cart", properties)
           }
        }
        """
}
