// The loopback HTTP server lives in its own target (the `receive` command uses it too); tests and
// the benchmark keep reaching it through this module.
@_exported import LoopbackHTTP
