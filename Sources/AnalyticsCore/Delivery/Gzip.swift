import CZlib

/// Why zlib refused to compress or inflate a buffer.
package struct GzipError: Error, Sendable, Equatable, CustomStringConvertible {
    package var operation: String
    package var code: Int32
    package var detail: String
    package var description: String { "gzip \(operation) failed (zlib code \(code)): \(detail)" }

    /// The stream inflates to more than the limit given (as opposed to being corrupt).
    package var isOverLimit: Bool { operation == "inflate" && detail.hasPrefix(Self.overLimit) }
    static let overLimit = "output exceeds the"
}

/// gzip (RFC 1952) compression through zlib. Upload bodies are repetitive JSON, so the fastest
/// level already shrinks them about tenfold; higher levels cost CPU the uploader needs elsewhere.
///
/// A compressor keeps its zlib stream between calls (`deflateReset` instead of a fresh 256 KB
/// state per batch). It is not thread-safe: give each uploading thread its own.
package final class GzipCompressor {
    private var stream = z_stream()
    private var ready = false
    package let level: Int32

    /// `level` 1 (fastest, the default) … 9 (smallest).
    package init(level: Int32 = 1) {
        self.level = max(1, min(9, level))
    }


    /// Output space kept between calls (an upload body compresses into the same pages every
    /// time instead of fresh, zero-filled ones).
    private var scratch: UnsafeMutableRawBufferPointer?

    deinit {
        if ready { deflateEnd(&stream) }
        scratch?.deallocate()
    }

    /// Compresses `input` into a complete gzip member.
    package func compress(_ input: UnsafeRawBufferPointer) throws(GzipError) -> [UInt8] {
        try compress(pieces: [input])
    }

    /// Compresses the concatenation of `pieces` into one gzip member, without joining them first
    /// (an upload body is its events plus a per-attempt tail).
    package func compress(pieces: [UnsafeRawBufferPointer]) throws(GzipError) -> [UInt8] {
        if !ready {
            // windowBits 15 + 16 asks zlib for a gzip header and trailer instead of a zlib one.
            let rc = deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
            guard rc == Z_OK else { throw GzipError(operation: "init", code: rc, detail: "deflateInit2 refused") }
            ready = true
        } else {
            deflateReset(&stream)
        }
        let total = pieces.reduce(0) { $0 + $1.count }
        // deflateBound covers one call; each extra piece may add a flush marker's worth of bytes.
        let bound = Int(deflateBound(&stream, uLong(total))) + 32 + 8 * pieces.count
        if (scratch?.count ?? 0) < bound {
            scratch?.deallocate()
            scratch = .allocate(byteCount: bound, alignment: 16)
        }
        let out = scratch!
        stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
        stream.avail_out = uInt(bound)
        var rc: Int32 = Z_OK
        for (i, piece) in pieces.enumerated() {
            stream.next_in = UnsafeMutablePointer(mutating: piece.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(piece.count)
            rc = deflate(&stream, i == pieces.count - 1 ? Z_FINISH : Z_NO_FLUSH)
            if rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR { break }
        }
        if pieces.isEmpty { rc = deflate(&stream, Z_FINISH) }
        let produced = bound - Int(stream.avail_out)
        stream.next_in = nil
        stream.next_out = nil
        guard rc == Z_STREAM_END else {
            throw GzipError(operation: "deflate", code: rc, detail: "output bound too small or stream error")
        }
        return [UInt8](UnsafeRawBufferPointer(start: out.baseAddress, count: produced))
    }

    package func compress(_ input: [UInt8]) throws(GzipError) -> [UInt8] {
        try input.withUnsafeBytes { raw in Result { () throws(GzipError) in try compress(raw) } }.get()
    }
}

/// One-shot helpers for code that compresses rarely (tests, the settings cache is not compressed).
package enum Gzip {
    /// Compresses with a throw-away compressor at the fastest level.
    package static func compress(_ input: [UInt8]) throws(GzipError) -> [UInt8] {
        try GzipCompressor().compress(input)
    }

    /// Inflates a gzip (or zlib) stream; concatenated gzip members are inflated one after another.
    /// `limit` bounds the output so that a hostile "zip bomb" cannot exhaust memory.
    package static func decompress(_ input: UnsafeRawBufferPointer, limit: Int = 64 << 20) throws(GzipError) -> [UInt8] {
        var stream = z_stream()
        // 15 + 32: detect gzip or zlib headers automatically.
        var rc = inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw GzipError(operation: "init", code: rc, detail: "inflateInit2 refused") }
        defer { inflateEnd(&stream) }
        guard let base = input.baseAddress, input.count > 0 else {
            throw GzipError(operation: "inflate", code: Z_DATA_ERROR, detail: "empty input")
        }
        // Inflate straight into the result, growing it geometrically: no intermediate copies.
        var output = [UInt8](repeating: 0, count: min(limit + 1, max(16 * 1024, input.count * 4)))
        var produced = 0
        stream.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        while true {
            if produced == output.count {
                guard output.count <= limit else {
                    throw GzipError(operation: "inflate", code: Z_BUF_ERROR, detail: "\(GzipError.overLimit) \(limit)-byte limit")
                }
                // An array, not repeatElement: a generic sequence is copied element by element in
                // debug builds (the tests' loopback server inflates every upload with this).
                output.append(contentsOf: [UInt8](repeating: 0, count: min(output.count, limit + 1 - output.count)))
            }
            let before = produced
            output.withUnsafeMutableBufferPointer { out in
                stream.next_out = out.baseAddress! + produced
                stream.avail_out = uInt(out.count - produced)
                rc = inflate(&stream, Z_NO_FLUSH)
                produced = out.count - Int(stream.avail_out)
                stream.next_out = nil
            }
            if produced > limit {
                throw GzipError(operation: "inflate", code: Z_BUF_ERROR, detail: "\(GzipError.overLimit) \(limit)-byte limit")
            }
            if rc == Z_STREAM_END {
                if stream.avail_in == 0 { break }
                // Another gzip member follows.
                inflateReset(&stream)
                continue
            }
            guard rc == Z_OK || (rc == Z_BUF_ERROR && produced == output.count) else {
                let detail = rc == Z_BUF_ERROR ? "truncated data" : (stream.msg.map { String(cString: $0) } ?? "corrupt data")
                throw GzipError(operation: "inflate", code: rc, detail: detail)
            }
            if stream.avail_in == 0 && produced == before && produced < output.count {
                throw GzipError(operation: "inflate", code: Z_BUF_ERROR, detail: "truncated data")
            }
        }
        output.removeSubrange(produced...)
        return output
    }

    package static func decompress(_ input: [UInt8], limit: Int = 64 << 20) throws(GzipError) -> [UInt8] {
        try input.withUnsafeBytes { raw in Result { () throws(GzipError) in try decompress(raw, limit: limit) } }.get()
    }
}
