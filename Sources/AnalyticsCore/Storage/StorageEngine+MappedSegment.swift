#if canImport(Glibc)
import Glibc
#endif

extension StorageEngine {
    // MARK: The mapped active segment

    /// Maps the active segment for appends when the file system reserves the space for it
    /// (posix_fallocate: a full disk fails here, never later inside a copy) and the reserved
    /// space fits under the disk cap (the files never occupy more than the cap).
    func mapActive() {
        guard mapped == nil, let file = active, let last = segments.last, last.size + recordHeaderSize < segmentLimit,
              totalBytes - last.size + segmentLimit <= configuration.maxDiskBytes else { return }
        guard posix_fallocate(file.fd, 0, off_t(segmentLimit)) == 0 else {
            _ = ftruncate(file.fd, off_t(last.size))
            return
        }
        let address = mmap(nil, segmentLimit, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd, 0)
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else {
            _ = ftruncate(file.fd, off_t(last.size))
            return
        }
        mapped = address
        mappedBytes = segmentLimit
        populatedBytes = last.size & ~4095
    }

    func populate(_ address: UnsafeMutableRawPointer, through end: Int) {
        let upTo = min(mappedBytes, max(end, populatedBytes + StorageEngine.populateStretch))
        if canPopulate, madvise(address + populatedBytes, upTo - populatedBytes, 23 /* MADV_POPULATE_WRITE */) != 0 {
            canPopulate = false
        }
        populatedBytes = upTo
    }

    /// Ends the mapping and gives the active file its exact size back (before it is sealed,
    /// closed, or written by pwrite beyond the mapping).
    func unmapActive() throws(QueueError) {
        guard let address = mapped, let file = active, let last = segments.last else { return }
        munmap(address, mappedBytes)
        mapped = nil
        mappedBytes = 0
        try file.truncate(to: last.size)
    }

    func setAsideFile(_ id: UInt64, reason: String) throws(QueueError) {
        if readFileSegment == id { readFile = nil; readFileSegment = .max }
        reader.invalidate()
        let original = path(id)
        let aside = StorageDirectory.unusedPath(stem: original, suffix: ".corrupt")
        try StorageDirectory.rename(original, to: aside)
        pendingErrors.append(.corruptFile(path: original, reason: reason, setAsideAs: aside))
    }

    /// Copies damaged bytes `[from, to)` of a segment next to it as `*.at-<offset>.corrupt` for
    /// inspection and reports them; the reader then skips them.
    /// `forged`: the bytes start with a whole record whose MAC does not verify (reported as not
    /// written by this host).
    func setAsideRegion(_ id: UInt64, file: StorageFile, from: Int, to: Int, reason: String, forged: Bool = false) {
        guard setAsideRegions.insert(Position(segment: id, offset: from)).inserted else { return }
        let aside = copyAside(id, file: file, from: from, to: to)
        if forged {
            pendingErrors.append(.notWrittenByHost(path: path(id), offset: from, length: to - from, reason: reason, setAsideAs: aside))
        } else {
            pendingErrors.append(.corruptRegion(path: path(id), offset: from, length: to - from, reason: reason, setAsideAs: aside))
        }
    }

    /// Copies bytes `[from, to)` of a segment to `<segment>.at-<from>.corrupt` (once) and returns that path.
    func copyAside(_ id: UInt64, file: StorageFile, from: Int, to: Int) -> String {
        let original = path(id)
        let aside = "\(original).at-\(from).corrupt"
        if !StorageDirectory.exists(aside) {
            do {
                let copy = try StorageFile(path: aside, flags: O_WRONLY | O_CREAT | O_EXCL)
                var offset = from
                while offset < to {
                    let chunk = try file.readBytes(count: min(64 << 10, to - offset), at: offset)
                    if chunk.isEmpty { break }
                    try copy.write(chunk, at: offset - from)
                    offset += chunk.count
                }
            } catch {
                pendingErrors.append(error)
            }
        }
        return aside
    }
}
