/// Makes the built-in Segment.io destination from `integrations["Segment.io"]`. The client adds
/// this factory on its own (as analytics-swift adds its SegmentDestination) unless
/// `Configuration.autoAddSegmentDestination` is false or a factory for the key is already given.
public struct SegmentDestinationFactory: IntegrationFactory {
    public let key = RoutingRules.segmentDestinationKey

    public init() {}

    public func create(settings: JSONObject, analytics: Analytics) throws -> DestinationPlugin {
        SegmentDestination(settings: settings, analytics: analytics)
    }

    /// `configuration` with this factory added when the client should upload to Segment.
    static func registering(in configuration: Configuration) -> Configuration {
        guard configuration.autoAddSegmentDestination,
              !configuration.integrationFactories.contains(where: { $0.key == RoutingRules.segmentDestinationKey }) else {
            return configuration
        }
        var c = configuration
        c.integrationFactories.append(SegmentDestinationFactory())
        return c
    }
}
