// Package rootfs turns container images into root filesystems without a
// container daemon: it pulls from any OCI or Docker v2 registry with
// go-containerregistry's transport (credentials from the Docker config and
// its credential helpers, or given explicitly; plain HTTP to loopback
// registries only), verifies every digest itself — each manifest, the
// config, every compressed layer and every layer's uncompressed diff id,
// reading each stream to its end — and flattens the layers into one
// directory that a sandbox mounts read-only as "/".
//
// A Cache keeps one root per image manifest digest under a directory of
// the data directory, shared by every job and every process of the host
// that uses it, and evicts the least recently used past a byte limit,
// never one a job holds (a shared flock per holder, released by the
// kernel if the holder dies). Jobs that want one digest at once share one
// pull: in a process by waiting for the first, across processes by an
// exclusive flock per digest. A pull unpacks into a temporary directory
// and renames it into place, so a root that is there is complete; what a
// crash leaves is removed when a Cache is next opened. The cache is made
// to survive process crashes; after an operating-system crash, clear it
// (files are not synced).
//
// Unpacking applies layers bottom first with OCI semantics: whiteouts
// (.wh.NAME) and opaque directories (.wh..wh..opq) hide what lower layers
// made, hard links and symbolic links are kept. Every write goes through
// os.Root, so nothing can land outside the root: an entry or a hard link
// whose path climbs above the top ("../") makes the image unsafe
// (KindUnsafe), and symbolic links on the way to an entry are followed as
// the image sees them — an absolute target starts at the root, ".." stops
// there — the way a runtime applies layers inside the root. Device nodes
// and FIFOs are not created (the sandbox mounts its own /dev), setuid and
// setgid bits are cleared, extended attributes (file capabilities among
// them) and ownership are not kept: every file belongs to the user the
// worker runs as, every directory is writable and searchable by it (the
// sandbox mounts the root read-only), and modification times of files
// are kept.
//
// Failures of the image — a bad reference, not found, refused, a digest
// mismatch, no image for the host's platform, an unsupported media type,
// an unsafe layer — are *Error values whose text names the image and the
// registry's answer, made to be shown as they are.
package rootfs
