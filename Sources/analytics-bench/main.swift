print("analytics-bench")
