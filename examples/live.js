// The demo's LivePlugins bundle: `make run` passes it as the fallback bundle
// (analytics-host run --live-plugins examples/live.js). Plain Analytics Live JavaScript.

// The example of docs/liveplugins.md: examples/events.ndjson sends "Product Viewed" with the misnamed property
// product_did; every destination receives product_id instead.
class FixProductViewed extends LivePlugin {
    track(event) {
        if (event.event == "Product Viewed") {
            event.properties.product_id = event.properties.product_did
            delete event.properties.product_did
        }
        return event
    }
}
analytics.add(new FixProductViewed(LivePluginType.enrichment, null))

// A new event, made in JavaScript, for every large order: it runs through the whole pipeline
// (and carries context.__eventOrigin = {type: "js", version: ...}).
class HighValueOrders extends LivePlugin {
    track(event) {
        if (event.event === "Order Completed" && event.properties.total >= 40) {
            analytics.track("High Value Order", { order_id: event.properties.order_id, total: event.properties.total })
        }
        return event
    }
}
analytics.add(new HighValueOrders(LivePluginType.enrichment, null))

// Runs inside Console's own timeline only: Console's lines show the mark, File's do not.
class MarkForConsole extends LivePlugin {
    track(event) {
        event.properties.seen_by = "live.js"
        return event
    }
}
analytics.add(new MarkForConsole(LivePluginType.enrichment, "Console"))

console.log("examples/live.js loaded: FixProductViewed, HighValueOrders, MarkForConsole (Console only)")

// Signals (`make run` passes --signals examples/signals.ndjson): the two event generators
// of docs/signals.md. A navigation signal becomes a screen event; an "Add To Cart" tap becomes a track
// event enriched with the product found in an earlier network response (signals.find).
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
    if (signal.type === SignalType.Interaction && signal.data.title === "Add To Cart") {
        let properties = {}
        const network = signals.find(signal, SignalType.Network, (s) => {
            return (s.data.action === NetworkAction.Response && s.data.url.includes("product"))
        })
        if (network) {
            properties.price = network.data.data.content.price
            properties.currency = network.data.data.content.currency ?? "USD"
            properties.productId = network.data.data.content.id
            properties.productName = network.data.data.content.title
        }
        analytics.track("Add To Cart", properties)
        console.log("signal " + signal.index + " (tap on Add To Cart) became an \"Add To Cart\" event priced from signal " +
                    (network ? network.index : "none") + " (the product's network response)")
    }
}
