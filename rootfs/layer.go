package rootfs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// countingHash hashes and counts what is written to it.
type countingHash struct {
	h hash.Hash
	n int64
}

func newCountingHash() *countingHash { return &countingHash{h: sha256.New()} }

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

func (c *countingHash) sum() v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(c.h.Sum(nil))}
}

// layer fetches layer i (counted from 1) and applies it to u, reading both
// the compressed and the uncompressed stream to their ends and checking
// the compressed digest and size against desc and the uncompressed digest
// against diffID. A blob that fails to decompress or to parse is first
// checked against its digest, so corruption is named as such.
func (p *puller) layer(ctx context.Context, u *unpacker, i int, desc v1.Descriptor, diffID v1.Hash) error {
	if desc.Digest.Algorithm != "sha256" || diffID.Algorithm != "sha256" {
		return &Error{Image: p.image, Kind: KindUnsupported, Detail: fmt.Sprintf("layer %d: digest algorithm %s; want sha256", i, desc.Digest.Algorithm)}
	}
	rc, err := p.blob(ctx, desc.Digest)
	if err != nil {
		return err
	}
	defer rc.Close()
	compressed := newCountingHash()
	br := bufio.NewReaderSize(io.TeeReader(rc, compressed), 1<<20)
	applyErr := apply(u, br, diffID)
	// Whatever happened, the compressed stream is read to its end: its
	// digest decides whether the blob is what the manifest names.
	if _, err := io.Copy(io.Discard, br); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("layer %d: %w", i, ctx.Err())
		}
		return registryError(p.image, fmt.Sprintf("read layer %d (%s)", i, desc.Digest), err)
	}
	if got := compressed.sum(); got != desc.Digest {
		return digestError(p.image, fmt.Sprintf("layer %d", i), desc.Digest, got)
	}
	if compressed.n != desc.Size {
		return &Error{Image: p.image, Kind: KindDigest, Detail: fmt.Sprintf("layer %d (%s) has %d bytes, want %d", i, desc.Digest, compressed.n, desc.Size)}
	}
	var unsafe *unsafeError
	var dm *diffIDMismatch
	switch {
	case applyErr == nil:
		return nil
	case errors.As(applyErr, &unsafe):
		return &Error{Image: p.image, Kind: KindUnsafe, Detail: fmt.Sprintf("layer %d (%s): %s", i, desc.Digest, unsafe.msg)}
	case errors.As(applyErr, &dm):
		return digestError(p.image, fmt.Sprintf("uncompressed layer %d (diff id)", i), diffID, dm.got)
	case errors.Is(applyErr, errCorrupt):
		return &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("layer %d (%s): %v", i, desc.Digest, applyErr), Err: applyErr}
	case ctx.Err() != nil:
		return fmt.Errorf("layer %d: %w", i, ctx.Err())
	case hostTrouble(applyErr):
		return fmt.Errorf("layer %d (%s): %w", i, desc.Digest, applyErr)
	default:
		// The layer asks for what cannot be: a hard link to nothing, a
		// file under a file, a loop of links.
		return &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("layer %d (%s) cannot be applied: %v", i, desc.Digest, applyErr), Err: applyErr}
	}
}

// hostTrouble reports whether err is the host's (a full disk, an I/O
// error, no file descriptors left) rather than the layer's.
func hostTrouble(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EIO, syscall.EROFS, syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EACCES} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// errCorrupt marks a blob that does not decompress or is not a tar
// archive although its digest matches.
var errCorrupt = errors.New("corrupt layer")

type diffIDMismatch struct{ got v1.Hash }

func (e *diffIDMismatch) Error() string { return "diff id mismatch: got " + e.got.String() }

// apply decompresses r (gzip, zstd or none, told by its first bytes),
// applies the tar archive in it and reads the uncompressed stream to its
// end, checking its digest against diffID.
func apply(u *unpacker, r *bufio.Reader, diffID v1.Hash) error {
	magic, _ := r.Peek(4)
	var raw io.Reader
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		gz, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("%w: gzip: %v", errCorrupt, err)
		}
		defer gz.Close()
		raw = gz
	case bytes.HasPrefix(magic, zstdMagic):
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return fmt.Errorf("%w: zstd: %v", errCorrupt, err)
		}
		defer zr.Close()
		raw = zr
	default:
		raw = r
	}
	uncompressed := newCountingHash()
	// Decompressing and hashing run ahead of the tar reader, so they
	// overlap with the writing of the files.
	ahead := newReadAhead(io.TeeReader(raw, uncompressed), 256<<10, 8)
	defer ahead.Close()
	stream := &readErrors{r: ahead}
	if err := u.apply(tar.NewReader(stream)); err != nil {
		switch {
		case stream.err != nil:
			return fmt.Errorf("%w: %v", errCorrupt, stream.err)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, tar.ErrHeader), errors.Is(err, tar.ErrFieldTooLong):
			// A tar archive cut short or not a tar archive at all.
			return fmt.Errorf("%w: %v", errCorrupt, err)
		}
		return err
	}
	// The end-of-archive marker is not the end of the stream: the padding
	// after it and the decompressor's own checksum come only on reading
	// to the end, and the diff id covers every byte.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return fmt.Errorf("%w: %v", errCorrupt, err)
	}
	if got := uncompressed.sum(); got != diffID {
		return &diffIDMismatch{got: got}
	}
	return nil
}

// readErrors keeps the first error reading r, so a failure while
// unpacking can be told apart: the stream's (corruption) or the root's.
type readErrors struct {
	r   io.Reader
	err error
}

func (e *readErrors) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		e.err = err
	}
	return n, err
}

// readAhead reads r in a goroutine of its own, up to depth chunks of size
// bytes ahead of its reader. Close stops the goroutine and waits for it.
type readAhead struct {
	chunks chan []byte // read, in order; closed after the last
	free   chan []byte // buffers to fill
	done   chan struct{}
	exited chan struct{}
	err    error // why chunks was closed: io.EOF or r's error

	buf, cur []byte // the chunk being read, and what is left of it
}

func newReadAhead(r io.Reader, size, depth int) *readAhead {
	ra := &readAhead{
		chunks: make(chan []byte, depth),
		free:   make(chan []byte, depth+1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	for range depth + 1 {
		ra.free <- make([]byte, size)
	}
	go ra.run(r)
	return ra
}

var errReadAheadClosed = errors.New("read ahead closed")

func (ra *readAhead) run(r io.Reader) {
	defer close(ra.exited)
	defer close(ra.chunks)
	defer func() {
		if p := recover(); p != nil {
			ra.err = fmt.Errorf("read ahead panicked: %v", p)
		}
	}()
	for {
		var buf []byte
		select {
		case buf = <-ra.free:
		case <-ra.done:
			ra.err = errReadAheadClosed
			return
		}
		n, err := fill(r, buf)
		if n > 0 {
			select {
			case ra.chunks <- buf[:n]:
			case <-ra.done:
				ra.err = errReadAheadClosed
				return
			}
		}
		if err != nil {
			ra.err = err
			return
		}
	}
}

// fill reads r until buf is full or r fails (io.EOF included).
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Read implements io.Reader.
func (ra *readAhead) Read(p []byte) (int, error) {
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.free <- ra.buf[:cap(ra.buf)]
			ra.buf = nil
		}
		b, ok := <-ra.chunks
		if !ok {
			return 0, ra.err
		}
		ra.buf, ra.cur = b, b
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Close stops reading ahead and waits until the goroutine has ended.
func (ra *readAhead) Close() {
	close(ra.done)
	<-ra.exited
}
