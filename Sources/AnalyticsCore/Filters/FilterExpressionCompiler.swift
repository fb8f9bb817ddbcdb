/// Turns a matcher's `ir` (the JSON form of an FQL expression) into a ``FilterExpression``,
/// rejecting anything the language does not define, so that a broken rule is found once, when
/// settings arrive, and can fail closed instead of misbehaving per event.
enum FilterExpressionCompiler {
    /// Why an `ir` is unusable; `position` locates the bad part inside the ir (`ir[2][1]`).
    struct Failure: Error, Sendable {
        let position: String
        let reason: String
    }

    /// Deeper trees are refused so that evaluation can never exhaust the stack.
    static let maximumDepth = 128

    /// Compiles a parsed ir: an operator array, or a bare path / literal (true only when its value
    /// is the boolean `true`).
    static func compile(_ ir: JSON) throws(Failure) -> FilterExpression {
        switch ir {
        case .array(let items): return try compileOperation(items, at: "ir", depth: 0)
        case .string, .object: return try compileOperand(ir, at: "ir", depth: 0)
        default: throw Failure(position: "ir", reason: "expected an expression array, a path or a {\"value\": …} literal, found \(JSON.kindName(ir))")
        }
    }

    private static func compileOperand(_ json: JSON, at position: String, depth: Int) throws(Failure) -> FilterExpression {
        switch json {
        case .string(let path):
            return .path(FilterPath(path))
        case .object(let o):
            guard let v = o["value"] else {
                throw Failure(position: position, reason: "a literal must be an object with a \"value\" member")
            }
            return .literal(v)
        case .array(let items):
            return try compileOperation(items, at: position, depth: depth + 1)
        default:
            throw Failure(position: position, reason: "expected a path string, a {\"value\": …} literal or a nested expression, found \(JSON.kindName(json))")
        }
    }

    private static func compileOperation(_ items: [JSON], at position: String, depth: Int) throws(Failure) -> FilterExpression {
        guard depth < maximumDepth else {
            throw Failure(position: position, reason: "expression nested deeper than \(maximumDepth) levels")
        }
        guard let head = items.first else { throw Failure(position: position, reason: "empty expression") }
        guard case .string(let op) = head else {
            throw Failure(position: position + "[0]", reason: "operator must be a string, found \(JSON.kindName(head))")
        }

        func arity(_ n: Int) throws(Failure) {
            guard items.count == n + 1 else {
                throw Failure(position: position, reason: "\"\(op)\" takes \(n) argument\(n == 1 ? "" : "s"), found \(items.count - 1)")
            }
        }
        func operand(_ i: Int) throws(Failure) -> FilterExpression {
            try compileOperand(items[i], at: "\(position)[\(i)]", depth: depth)
        }

        switch op {
        case "!":
            try arity(1)
            return .not(try operand(1))
        case "and", "or":
            var parts: [FilterExpression] = []
            for i in 1..<items.count { parts.append(try operand(i)) }
            return op == "and" ? .and(parts) : .or(parts)
        case "=", "!=":
            try arity(2)
            return .equal(try operand(1), try operand(2), negated: op == "!=")
        case "<", "<=", ">", ">=":
            try arity(2)
            let cmp: FilterExpression.NumericComparison =
                op == "<" ? .less : op == "<=" ? .lessOrEqual : op == ">" ? .greater : .greaterOrEqual
            return .compare(try operand(1), try operand(2), cmp)
        case "in":
            try arity(2)
            guard case .object(let listLiteral) = items[2], case .array(let list)? = listLiteral["value"] else {
                throw Failure(position: "\(position)[2]", reason: "\"in\" needs a {\"value\": [...]} list literal, found \(JSON.kindName(items[2]))")
            }
            var candidates: [FilterExpression] = []
            for (i, item) in list.enumerated() {
                candidates.append(try compileOperand(item, at: "\(position)[2].value[\(i)]", depth: depth))
            }
            return .isIn(try operand(1), candidates)
        case "contains":
            try arity(2)
            return .contains(try operand(1), try operand(2))
        case "match":
            try arity(2)
            let subject = try operand(1)
            switch try operand(2) {
            case .literal(let glob):
                return .matchCompiled(subject, glob.stringValue.flatMap(GlobPattern.init))
            case let dynamic:
                return .matchDynamic(subject, dynamic)
            }
        case "lowercase":
            try arity(1)
            return .lowercase(try operand(1))
        case "length":
            try arity(1)
            return .length(try operand(1))
        case "typeof":
            try arity(1)
            return .typeOf(try operand(1))
        default:
            throw Failure(position: position + "[0]", reason: "unknown operator \"\(op)\"")
        }
    }

}
