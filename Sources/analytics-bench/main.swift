print("analytics-bench")
let filterResult = filterBenchmark()
print("destination filter: \(Int(filterResult.evaluationsPerSecond)) evaluations/s, \(Int(filterResult.nanosecondsPerEvaluation)) ns/evaluation wall, \(Int(lastFilterBenchmarkCPUNanosecondsPerEvaluation)) ns/evaluation on CPU")
