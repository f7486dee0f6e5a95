/// Values by identifier, kept densely: the values in one array, their positions in a hash
/// table. What the merged state keeps of each item, and the view's items, are tables of this
/// kind.
///
/// A dictionary keeps a value's bytes in every bucket, used or not: at 100,000 item records of
/// a few hundred bytes that was 75 MB of buckets, written all over by an open. Here a bucket
/// holds a position (8 bytes), and the values fill one array. Removing a value moves the last
/// one into its place, so the order of iteration is no order at all, as a dictionary's.
struct DenseTable<Value>: Sequence {
    typealias Element = (key: Identifier, value: Value)

    private var positions: [Identifier: Int] = [:]
    /// The identifiers, in the order of `values`.
    private(set) var keys: [Identifier] = []
    private(set) var values: [Value] = []

    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }

    mutating func reserveCapacity(_ n: Int) {
        positions.reserveCapacity(n)
        keys.reserveCapacity(n)
        values.reserveCapacity(n)
    }

    func contains(_ id: Identifier) -> Bool { positions[id] != nil }

    subscript(id: Identifier) -> Value? {
        get { positions[id].map { values[$0] } }
        set {
            if let newValue {
                if let i = positions[id] { values[i] = newValue } else { append(id, newValue) }
            } else {
                removeValue(forKey: id)
            }
        }
    }

    /// The value of `id`, made from `value` when there is none; changed in place.
    subscript(id: Identifier, default value: @autoclosure () -> Value) -> Value {
        get { self[id] ?? value() }
        _modify {
            let i: Int
            if let known = positions[id] {
                i = known
            } else {
                i = values.count
                append(id, value())
            }
            yield &values[i]
        }
    }

    @discardableResult
    mutating func removeValue(forKey id: Identifier) -> Value? {
        guard let i = positions.removeValue(forKey: id) else { return nil }
        let last = values.count - 1
        if i != last {
            values.swapAt(i, last)
            keys.swapAt(i, last)
            positions[keys[i]] = i
        }
        keys.removeLast()
        return values.removeLast()
    }

    private mutating func append(_ id: Identifier, _ value: Value) {
        positions[id] = values.count
        keys.append(id)
        values.append(value)
    }

    struct Iterator: IteratorProtocol {
        fileprivate let table: DenseTable
        fileprivate var position = 0

        mutating func next() -> Element? {
            guard position < table.values.count else { return nil }
            defer { position += 1 }
            return (table.keys[position], table.values[position])
        }
    }

    func makeIterator() -> Iterator { Iterator(table: self) }
}
