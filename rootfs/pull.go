package rootfs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// maxManifestBytes bounds a manifest or an index, and maxConfigBytes an
// image config; the distribution spec asks registries to accept at least
// 4 MiB manifests, and configs are far smaller in practice.
const (
	maxManifestBytes = 4 << 20
	maxConfigBytes   = 8 << 20
	// maxIndexDepth bounds indexes of indexes.
	maxIndexDepth = 3
)

// manifestAccept is what a manifest request accepts: OCI and Docker
// images and indexes.
var manifestAccept = strings.Join([]string{
	string(types.OCIImageIndex),
	string(types.OCIManifestSchema1),
	string(types.DockerManifestList),
	string(types.DockerManifestSchema2),
}, ", ")

// puller reads one repository of one registry over an authenticated
// transport.
type puller struct {
	image  string // the reference as the caller gave it
	ref    name.Reference
	client *http.Client
	base   string // scheme://registry/v2/repository
}

// resolved is an image manifest chosen for the platform, its bytes
// verified against its digest.
type resolved struct {
	digest      v1.Hash // of the image manifest
	indexDigest v1.Hash // of the index it was chosen from; zero if none
	manifest    *v1.Manifest
}

// connect authenticates to ref's registry for pulls. Credentials come from
// keychain; plain HTTP is used, and allowed, for loopback registries only.
func connect(ctx context.Context, image string, ref name.Reference, keychain authn.Keychain, base http.RoundTripper) (*puller, error) {
	repo := ref.Context()
	auth, err := authn.Resolve(ctx, keychain, repo)
	if err != nil {
		return nil, &Error{Image: image, Kind: KindRefused, Detail: fmt.Sprintf("credentials for %s: %v", repo.RegistryStr(), err), Err: err}
	}
	guarded := loopbackOnlyHTTP{inner: base}
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, guarded, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, registryError(image, "reach "+repo.RegistryStr(), err)
	}
	scheme := "https"
	if isLoopback(hostOf(repo.RegistryStr())) {
		scheme = "http"
	}
	return &puller{
		image:  image,
		ref:    ref,
		client: &http.Client{Transport: rt},
		base:   fmt.Sprintf("%s://%s/v2/%s", scheme, repo.RegistryStr(), repo.RepositoryStr()),
	}, nil
}

// resolve fetches the manifest ref names and, for an index, the image
// manifest of platform, verifying each against its digest.
func (p *puller) resolve(ctx context.Context, platform Platform) (*resolved, error) {
	var want v1.Hash
	if d, ok := p.ref.(name.Digest); ok {
		h, err := v1.NewHash(d.DigestStr())
		if err != nil {
			return nil, &Error{Image: p.image, Kind: KindReference, Detail: err.Error(), Err: err}
		}
		want = h
	}
	body, mt, got, err := p.manifest(ctx, p.ref.Identifier(), want, -1)
	if err != nil {
		return nil, err
	}
	var index v1.Hash
	for depth := 0; mt.IsIndex(); depth++ {
		if depth == maxIndexDepth {
			return nil, &Error{Image: p.image, Kind: KindUnsupported, Detail: fmt.Sprintf("indexes nested more than %d deep", maxIndexDepth)}
		}
		idx, err := v1.ParseIndexManifest(bytes.NewReader(body))
		if err != nil {
			return nil, &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("index %s: %v", got, err), Err: err}
		}
		if depth == 0 {
			index = got
		}
		desc, err := choose(idx.Manifests, platform)
		if err != nil {
			return nil, &Error{Image: p.image, Kind: KindPlatform, Detail: err.Error()}
		}
		body, mt, got, err = p.manifest(ctx, desc.Digest.String(), desc.Digest, desc.Size)
		if err != nil {
			return nil, err
		}
	}
	if !mt.IsImage() {
		return nil, &Error{Image: p.image, Kind: KindUnsupported, Detail: fmt.Sprintf("manifest media type %q; want an OCI or Docker v2 image", mt)}
	}
	m, err := v1.ParseManifest(bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("manifest %s: %v", got, err), Err: err}
	}
	for i, l := range m.Layers {
		if !layerMediaTypes[l.MediaType] {
			return nil, &Error{Image: p.image, Kind: KindUnsupported, Detail: fmt.Sprintf("layer %d (%s) has media type %q", i+1, l.Digest, l.MediaType)}
		}
	}
	return &resolved{digest: got, indexDigest: index, manifest: m}, nil
}

// layerMediaTypes are the layer media types unpacked; the compression is
// told by the blob's first bytes, not by the name.
var layerMediaTypes = map[types.MediaType]bool{
	types.OCILayer:                true,
	types.OCIUncompressedLayer:    true,
	types.OCILayerZStd:            true,
	types.DockerLayer:             true,
	types.DockerUncompressedLayer: true,
}

// manifest fetches the manifest named by reference (a tag or a digest),
// returning its bytes, media type and digest. A non-zero want (and size
// when not negative) must match the bytes.
func (p *puller) manifest(ctx context.Context, reference string, want v1.Hash, size int64) ([]byte, types.MediaType, v1.Hash, error) {
	what := "get the manifest " + reference
	if !strings.Contains(reference, ":") {
		what = "get the manifest of tag " + reference
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/manifests/"+reference, nil)
	if err != nil {
		return nil, "", v1.Hash{}, fmt.Errorf("manifest request: %w", err)
	}
	req.Header.Set("Accept", manifestAccept)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, "", v1.Hash{}, registryError(p.image, what, err)
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		return nil, "", v1.Hash{}, registryError(p.image, what, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, "", v1.Hash{}, registryError(p.image, "read the manifest "+reference, err)
	}
	if len(body) > maxManifestBytes {
		return nil, "", v1.Hash{}, &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("manifest %s is larger than %d bytes", reference, maxManifestBytes)}
	}
	got := sha256Hash(body)
	if want != (v1.Hash{}) && got != want {
		return nil, "", v1.Hash{}, digestError(p.image, "manifest", want, got)
	}
	if size >= 0 && int64(len(body)) != size {
		return nil, "", v1.Hash{}, &Error{Image: p.image, Kind: KindDigest, Detail: fmt.Sprintf("manifest %s has %d bytes, want %d", got, len(body), size)}
	}
	if h, err := v1.NewHash(resp.Header.Get("Docker-Content-Digest")); err == nil && h.Algorithm == "sha256" && h != got {
		return nil, "", v1.Hash{}, digestError(p.image, "manifest (as the registry names it)", h, got)
	}
	mt := types.MediaType(resp.Header.Get("Content-Type"))
	if i := strings.IndexByte(string(mt), ';'); i >= 0 {
		mt = types.MediaType(strings.TrimSpace(string(mt[:i])))
	}
	if !mt.IsIndex() && !mt.IsImage() {
		// Some registries answer application/json; the body says.
		var probe struct {
			MediaType types.MediaType `json:"mediaType"`
		}
		if json.Unmarshal(body, &probe) == nil && probe.MediaType != "" {
			mt = probe.MediaType
		}
	}
	return body, mt, got, nil
}

// blob opens the blob of digest d.
func (p *puller) blob(ctx context.Context, d v1.Hash) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/blobs/"+d.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("blob request: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, registryError(p.image, "get blob "+d.String(), err)
	}
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		resp.Body.Close()
		return nil, registryError(p.image, "get blob "+d.String(), err)
	}
	return resp.Body, nil
}

// config fetches and verifies the image config of m.
func (p *puller) config(ctx context.Context, m *v1.Manifest) (*v1.ConfigFile, error) {
	rc, err := p.blob(ctx, m.Config.Digest)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, maxConfigBytes+1))
	if err != nil {
		return nil, registryError(p.image, "read config "+m.Config.Digest.String(), err)
	}
	if len(body) > maxConfigBytes {
		return nil, &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("config %s is larger than %d bytes", m.Config.Digest, maxConfigBytes)}
	}
	if got := sha256Hash(body); got != m.Config.Digest {
		return nil, digestError(p.image, "config", m.Config.Digest, got)
	}
	if int64(len(body)) != m.Config.Size {
		return nil, &Error{Image: p.image, Kind: KindDigest, Detail: fmt.Sprintf("config %s has %d bytes, want %d", m.Config.Digest, len(body), m.Config.Size)}
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(body))
	if err != nil {
		return nil, &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("config %s: %v", m.Config.Digest, err), Err: err}
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return nil, &Error{Image: p.image, Kind: KindInvalid, Detail: fmt.Sprintf("config lists %d diff ids for %d layers", len(cfg.RootFS.DiffIDs), len(m.Layers))}
	}
	return cfg, nil
}

func sha256Hash(b []byte) v1.Hash {
	sum := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
}

func digestError(image, what string, want, got v1.Hash) *Error {
	return &Error{Image: image, Kind: KindDigest, Detail: fmt.Sprintf("%s does not match its digest: got %s, want %s", what, got, want)}
}

// registryError turns a failed request into an Error that carries the
// registry's answer in words.
func registryError(image, what string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var te *transport.Error
	if !errors.As(err, &te) {
		return &Error{Image: image, Kind: KindRegistry, Detail: fmt.Sprintf("%s: %v", what, err), Err: err}
	}
	kind := KindRegistry
	switch te.StatusCode {
	case http.StatusNotFound:
		kind = KindNotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		kind = KindRefused
	}
	answer := fmt.Sprintf("%d %s", te.StatusCode, http.StatusText(te.StatusCode))
	for _, d := range te.Errors {
		switch {
		case d.Message != "" && string(d.Code) != "":
			answer += fmt.Sprintf(": %s: %s", d.Code, d.Message)
		case d.Message != "":
			answer += ": " + d.Message
		case string(d.Code) != "":
			answer += ": " + string(d.Code)
		}
	}
	return &Error{Image: image, Kind: kind, Status: te.StatusCode, Detail: fmt.Sprintf("%s: %s", what, answer), Err: err}
}

// loopbackOnlyHTTP refuses plain-HTTP requests to anything but a loopback
// address, token servers and redirects included: go-containerregistry
// would otherwise fall back to HTTP for RFC 1918 registries too.
type loopbackOnlyHTTP struct {
	inner http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t loopbackOnlyHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !isLoopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("plain http to %s refused: only loopback registries are reached without TLS", req.URL.Host)
	}
	return t.inner.RoundTrip(req)
}

// isLoopback reports whether host (no port) is localhost or an address
// in 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// hostOf strips the port from a registry name.
func hostOf(registry string) string {
	if h, _, err := net.SplitHostPort(registry); err == nil {
		return h
	}
	return registry
}
