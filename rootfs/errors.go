package rootfs

import (
	"fmt"
)

// Kind says why an image could not become a root.
type Kind int

// The kinds of Error.
const (
	// KindReference: the reference does not parse.
	KindReference Kind = iota + 1
	// KindNotFound: the registry has no such repository, tag or digest
	// (404).
	KindNotFound
	// KindRefused: the registry refused the credentials or their absence
	// (401, 403).
	KindRefused
	// KindRegistry: any other answer (429, 5xx, a malformed manifest) or no
	// answer at all; it may pass on a retry.
	KindRegistry
	// KindDigest: content that does not match its digest (a manifest, the
	// config, a compressed layer or an uncompressed layer's diff id).
	KindDigest
	// KindPlatform: an index with no image for the host's platform.
	KindPlatform
	// KindInvalid: a manifest, index or config that does not parse or
	// does not add up (a config listing fewer diff ids than layers).
	KindInvalid
	// KindUnsupported: a media type, schema or compression this package
	// does not unpack.
	KindUnsupported
	// KindUnsafe: a layer that tries to leave its root (a path or a hard
	// link with "../" beyond the top).
	KindUnsafe
)

var kindNames = map[Kind]string{
	KindReference:   "bad reference",
	KindNotFound:    "not found",
	KindRefused:     "refused",
	KindRegistry:    "registry error",
	KindDigest:      "digest mismatch",
	KindPlatform:    "no image for this platform",
	KindInvalid:     "invalid image",
	KindUnsupported: "unsupported",
	KindUnsafe:      "unsafe layer",
}

// String names the kind in a few words.
func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is why an image could not become a root. Its text names the image
// and, when the registry answered, the registry's answer in its own words;
// it is written to be shown to people as it is (the worker ends the job
// with it before any model call).
type Error struct {
	// Image is the reference as the caller gave it.
	Image string
	// Kind says why.
	Kind Kind
	// Status is the registry's HTTP status, or 0 when it did not answer
	// or the failure is not the registry's.
	Status int
	// Detail is the registry's answer ("401 Unauthorized: UNAUTHORIZED:
	// authentication required") or what did not match.
	Detail string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "image IMAGE: KIND: DETAIL".
func (e *Error) Error() string {
	if e.Detail == "" && e.Err != nil {
		return fmt.Sprintf("image %s: %s: %v", e.Image, e.Kind, e.Err)
	}
	return fmt.Sprintf("image %s: %s: %s", e.Image, e.Kind, e.Detail)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether the same pull may pass later: the registry
// did not answer, was overloaded or failed on its side.
func (e *Error) Temporary() bool { return e.Kind == KindRegistry }
