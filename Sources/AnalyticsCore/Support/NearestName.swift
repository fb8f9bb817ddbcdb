/// "Did you mean": the known name nearest to a mistyped one, by Damerau–Levenshtein distance
/// (optimal string alignment: insertions, deletions, substitutions and swaps of two neighbouring
/// characters each cost 1), compared without regard to case. A name is suggested only when it is
/// close: at most 1 edit for names of up to 4 characters, 2 up to 8, else a third of the length —
/// so `apiHots` finds `apiHost` and `rn` finds `run`, but `x` does not find `path`.
public enum NearestName {
    public static func suggestion(for typed: String, among known: some Sequence<String>) -> String? {
        let a = Array(typed.lowercased())
        guard !a.isEmpty else { return nil }
        let limit = a.count <= 4 ? 1 : a.count <= 8 ? 2 : a.count / 3
        var best: (name: String, distance: Int)?
        for name in known where name != typed {
            let d = distance(a, Array(name.lowercased()))
            guard d <= limit else { continue }
            if best == nil || d < best!.distance || (d == best!.distance && name < best!.name) { best = (name, d) }
        }
        return best?.name
    }

    /// The optimal-string-alignment distance between two character arrays.
    public static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var d = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d = min(d, previous2[j - 2] + 1) }
                current[j] = d
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
