package rootfs_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/agentfix/agentfix/rootfs"
)

// smallLayer is one file of about 64 KiB, so a blob cut in half still
// starts a valid gzip stream.
func smallLayer(t testing.TB, marker string) []byte {
	t.Helper()
	body := strings.Repeat(marker+"\n", 64<<10/(len(marker)+1))
	return tarball(t, dir("etc/", 0o755), file("etc/marker", 0o644, body))
}

// TestImageErrors pulls broken images and checks each error's kind and
// its text, which people read (testdata/errors.golden; -update rewrites
// it).
func TestImageErrors(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	authReg := newTestRegistry(t)
	authReg.user, authReg.pass = "robot", "s3cret"
	authReg.push(t, "private/app", "1", image{layers: [][]byte{smallLayer(t, "private")}})

	type setup func(t *testing.T) string // returns the reference
	tests := []struct {
		name  string
		setup setup
		opts  rootfs.Options
		kind  rootfs.Kind
	}{
		{"bad reference", func(*testing.T) string { return "UPPER/Case::tag" }, rootfs.Options{}, rootfs.KindReference},
		{"unknown repository", func(*testing.T) string { return reg.ref("nobody/here:1") }, rootfs.Options{}, rootfs.KindNotFound},
		{"unknown tag", func(t *testing.T) string {
			reg.push(t, "some/app", "1", image{layers: [][]byte{smallLayer(t, "some")}})
			return reg.ref("some/app:2")
		}, rootfs.Options{}, rootfs.KindNotFound},
		{"unknown digest", func(*testing.T) string {
			return reg.ref("some/app@sha256:" + strings.Repeat("ab", 32))
		}, rootfs.Options{}, rootfs.KindNotFound},
		{"no credentials", func(*testing.T) string { return authReg.ref("private/app:1") }, rootfs.Options{}, rootfs.KindRefused},
		{"wrong credentials", func(*testing.T) string { return authReg.ref("private/app:1") },
			rootfs.Options{Basic: map[string]rootfs.Credentials{authReg.host: {Username: "robot", Password: "wrong"}}}, rootfs.KindRefused},
		{"corrupted layer blob", func(t *testing.T) string {
			p := reg.push(t, "broken/flipped", "1", image{layers: [][]byte{smallLayer(t, "flipped")}})
			b := bytes.Clone(reg.blobs.get(p.layers[0]))
			b[len(b)/2] ^= 0xff
			reg.blobs.set(p.layers[0], b)
			return reg.ref("broken/flipped:1")
		}, rootfs.Options{}, rootfs.KindDigest},
		{"truncated layer blob", func(t *testing.T) string {
			p := reg.push(t, "broken/truncated", "1", image{layers: [][]byte{smallLayer(t, "truncated")}})
			b := reg.blobs.get(p.layers[0])
			reg.blobs.set(p.layers[0], b[:len(b)/2])
			return reg.ref("broken/truncated:1")
		}, rootfs.Options{}, rootfs.KindDigest},
		{"layer whose diff id does not match", func(t *testing.T) string {
			reg.push(t, "broken/diffid", "1", image{layers: [][]byte{smallLayer(t, "diffid")}, edit: func(c *v1.ConfigFile) {
				c.RootFS.DiffIDs[0] = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}
			}})
			return reg.ref("broken/diffid:1")
		}, rootfs.Options{}, rootfs.KindDigest},
		{"bytes after the end of the tar archive", func(t *testing.T) string {
			// The manifest names the blob as stored; the diff id is of the
			// archive without the trailing bytes, which a reader that stops
			// at the end-of-archive marker never sees.
			l := smallLayer(t, "trailing")
			reg.push(t, "broken/trailing", "1", image{layers: [][]byte{l}, compressed: func(_ int, tar []byte) []byte {
				return gzipped(t, append(bytes.Clone(tar), []byte("garbage after the end")...))
			}})
			return reg.ref("broken/trailing:1")
		}, rootfs.Options{}, rootfs.KindDigest},
		{"gzip checksum wrong in a blob the manifest names", func(t *testing.T) string {
			reg.push(t, "broken/crc", "1", image{layers: [][]byte{smallLayer(t, "crc")}, compressed: func(_ int, tar []byte) []byte {
				b := gzipped(t, tar)
				b[len(b)-8] ^= 0xff // the CRC-32 in the gzip trailer
				return b
			}})
			return reg.ref("broken/crc:1")
		}, rootfs.Options{}, rootfs.KindInvalid},
		{"corrupted config", func(t *testing.T) string {
			p := reg.push(t, "broken/config", "1", image{layers: [][]byte{smallLayer(t, "config")}})
			b := bytes.Clone(reg.blobs.get(p.config))
			b[len(b)-2] ^= 0x01
			reg.blobs.set(p.config, b)
			return reg.ref("broken/config:1")
		}, rootfs.Options{}, rootfs.KindDigest},
		{"config with fewer diff ids than layers", func(t *testing.T) string {
			reg.push(t, "broken/count", "1", image{layers: [][]byte{smallLayer(t, "a"), smallLayer(t, "b")}, edit: func(c *v1.ConfigFile) {
				c.RootFS.DiffIDs = c.RootFS.DiffIDs[:1]
			}})
			return reg.ref("broken/count:1")
		}, rootfs.Options{}, rootfs.KindInvalid},
		{"not a tar archive", func(t *testing.T) string {
			reg.push(t, "broken/notar", "1", image{layers: [][]byte{[]byte(strings.Repeat("not a tar archive ", 100))}})
			return reg.ref("broken/notar:1")
		}, rootfs.Options{}, rootfs.KindInvalid},
	}
	var golden strings.Builder
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := tc.setup(t)
			if tc.opts.Dir == "" {
				tc.opts.Dir = filepath.Join(t.TempDir(), "images")
			}
			c := newCache(t, tc.opts)
			r, err := c.Get(context.Background(), ref)
			if err == nil {
				r.Release()
				t.Fatalf("Get(%s) succeeded; want a %v error", ref, tc.kind)
			}
			var e *rootfs.Error
			if !errors.As(err, &e) {
				t.Fatalf("Get: %v (%T); want a *rootfs.Error", err, err)
			}
			if e.Kind != tc.kind {
				t.Errorf("Kind = %v, want %v (%v)", e.Kind, tc.kind, err)
			}
			if e.Image != ref {
				t.Errorf("Image = %q, want %q", e.Image, ref)
			}
			if roots, _ := os.ReadDir(filepath.Join(tc.opts.Dir, "roots")); len(roots) != 0 {
				t.Errorf("a failed pull left a root")
			}
			if tmp, _ := os.ReadDir(filepath.Join(tc.opts.Dir, "tmp")); len(tmp) != 0 {
				t.Errorf("a failed pull left %d unpacks in tmp", len(tmp))
			}
			text := strings.ReplaceAll(strings.ReplaceAll(err.Error(), reg.host, "REGISTRY"), authReg.host, "AUTH-REGISTRY")
			fmt.Fprintf(&golden, "%s:\n\t%s\n", tc.name, text)
		})
	}
	checkGolden(t, "testdata/errors.golden", golden.String())
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// TestManifestDigestMismatch serves a manifest whose bytes differ from
// what the registry says they are, and from the digest asked for.
func TestManifestDigestMismatch(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	p := reg.push(t, "some/app", "1", image{layers: [][]byte{smallLayer(t, "app")}})
	reg.rewrite = func(b []byte) []byte { return append(b, ' ') }
	for _, ref := range []string{"some/app:1", "some/app@" + p.digest.String()} {
		c := newCache(t, rootfs.Options{})
		_, err := c.Get(context.Background(), reg.ref(ref))
		var e *rootfs.Error
		if !errors.As(err, &e) || e.Kind != rootfs.KindDigest || !strings.Contains(err.Error(), "manifest") {
			t.Errorf("Get(%s): %v; want a manifest digest error", ref, err)
		}
	}
}

func TestCredentials(t *testing.T) {
	reg := newTestRegistry(t)
	reg.user, reg.pass = "robot", "s3cret"
	reg.push(t, "private/app", "1", image{layers: [][]byte{smallLayer(t, "private")}})
	ref := reg.ref("private/app:1")

	t.Run("explicit basic auth", func(t *testing.T) {
		c := newCache(t, rootfs.Options{Basic: map[string]rootfs.Credentials{reg.host: {Username: "robot", Password: "s3cret"}}})
		get(t, c, ref)
	})
	t.Run("the Docker config", func(t *testing.T) {
		cfgDir := t.TempDir()
		auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
		cfg := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, reg.host, auth)
		if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", cfgDir)
		c := newCache(t, rootfs.Options{Keychain: authn.DefaultKeychain})
		get(t, c, ref)
	})
	t.Run("a credential helper named by the Docker config", func(t *testing.T) {
		cfgDir := t.TempDir()
		bin := t.TempDir()
		// docker-credential-test answers the get verb with the secret.
		helper := "#!/bin/sh\nread server\necho '{\"ServerURL\":\"'$server'\",\"Username\":\"robot\",\"Secret\":\"s3cret\"}'\n"
		if err := os.WriteFile(filepath.Join(bin, "docker-credential-test"), []byte(helper), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf(`{"credHelpers": {%q: "test"}}`, reg.host)
		if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", cfgDir)
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		c := newCache(t, rootfs.Options{Keychain: authn.DefaultKeychain})
		get(t, c, ref)
	})
}

func TestCorruptGzipBeyondTarEndFailsAfterUnpacking(t *testing.T) {
	t.Parallel()
	// A layer whose tar archive ends early in the stream: everything the
	// archive holds unpacks fine, and only reading the rest of the gzip
	// stream shows that its checksum is wrong. The root must not appear.
	reg := newTestRegistry(t)
	l := tarball(t, file("ok", 0o644, "fine"))
	reg.push(t, "broken/late", "1", image{layers: [][]byte{l}, compressed: func(_ int, tar []byte) []byte {
		padded := append(bytes.Clone(tar), make([]byte, 1<<20)...)
		b := gzipped(t, padded)
		b[len(b)-8] ^= 0xff
		return b
	}, edit: func(c *v1.ConfigFile) {
		h, _, _ := v1.SHA256(bytes.NewReader(append(bytes.Clone(l), make([]byte, 1<<20)...)))
		c.RootFS.DiffIDs[0] = h
	}})
	dir := filepath.Join(t.TempDir(), "images")
	_, err := newCache(t, rootfs.Options{Dir: dir}).Get(context.Background(), reg.ref("broken/late:1"))
	var e *rootfs.Error
	if !errors.As(err, &e) || e.Kind != rootfs.KindInvalid {
		t.Fatalf("Get: %v; want an invalid-layer error", err)
	}
	if roots, _ := os.ReadDir(filepath.Join(dir, "roots")); len(roots) != 0 {
		t.Errorf("the layer left a root")
	}
}
