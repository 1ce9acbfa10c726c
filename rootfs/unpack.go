package rootfs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
)

// maxLinkHops bounds the symbolic links followed while resolving one path,
// as the kernel's ELOOP does.
const maxLinkHops = 40

// unsafeError is a layer entry that tries to leave the root.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string { return e.msg }

// Skipped counts the layer entries unpacking left out or changed, for the
// caller to log.
type Skipped struct {
	// Devices are character and block device nodes (the sandbox mounts its
	// own /dev); FIFOs are named pipes. Neither is created.
	Devices, FIFOs int
	// SetID are files and directories whose setuid or setgid bit was
	// cleared.
	SetID int
	// Other are entries of other kinds (GNU tar's multi-volume parts and
	// the like).
	Other int
}

// unpacker applies layers in order, bottom first, to one root. Every
// write goes through os.Root, so no entry can reach outside the root
// whatever its path or the links already in the tree; symbolic links on
// the way to an entry are read as the image sees them (an absolute target
// starts at the root, ".." stops there), the way a container runtime
// applies layers inside the root.
type unpacker struct {
	root *os.Root
	buf  []byte
	// dirs holds resolved paths known to be directories (not links), so a
	// path's parents are checked once; any removal clears it.
	dirs map[string]bool
	// made holds the paths the current layer wrote, and madeUnder their
	// ancestors: whiteouts and opaque directories hide only what lower
	// layers made.
	made, madeUnder map[string]bool
	// gone holds the paths of entries left out (devices, FIFOs), so a hard
	// link to one is left out too.
	gone    map[string]bool
	skipped Skipped
	// last is the directory entries were last written in, opened as a
	// root of its own so each entry costs one lookup, not one per element
	// of its path; any removal forgets it.
	last    *os.Root
	lastDir string
}

func newUnpacker(root *os.Root) *unpacker {
	return &unpacker{root: root, buf: make([]byte, 256<<10), dirs: map[string]bool{}, gone: map[string]bool{}}
}

// parent returns the resolved directory dir as a root of its own.
func (u *unpacker) parent(dir string) (*os.Root, error) {
	if dir == "." {
		return u.root, nil
	}
	if u.last != nil && u.lastDir == dir {
		return u.last, nil
	}
	u.closeLast()
	r, err := u.root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	u.last, u.lastDir = r, dir
	return r, nil
}

func (u *unpacker) closeLast() {
	if u.last != nil {
		u.last.Close()
		u.last = nil
	}
}

// forget drops what is known of the tree, after a removal.
func (u *unpacker) forget() {
	clear(u.dirs)
	u.closeLast()
}

// close releases the directory kept open.
func (u *unpacker) close() { u.closeLast() }

// apply unpacks one layer's tar stream, up to its end-of-archive marker.
func (u *unpacker) apply(tr *tar.Reader) error {
	u.made, u.madeUnder = map[string]bool{}, map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if err := u.entry(hdr, tr); err != nil {
			return err
		}
	}
}

// clean turns an archive path into a path relative to the root ("." for
// the root itself); a path that climbs above the top is unsafe.
func clean(name string) (string, error) {
	p := path.Clean(strings.TrimLeft(name, "/"))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", &unsafeError{fmt.Sprintf("entry %q leaves the root", name)}
	}
	return p, nil
}

func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	p, err := clean(hdr.Name)
	if err != nil {
		return err
	}
	if p == "." {
		return nil // the root keeps its own mode
	}
	dir, base := path.Split(p)
	switch {
	case base == ".wh..wh..opq":
		return u.opaque(dir)
	case strings.HasPrefix(base, ".wh..wh."):
		return nil // aufs bookkeeping, not content
	case strings.HasPrefix(base, ".wh."):
		return u.whiteout(dir, strings.TrimPrefix(base, ".wh."))
	}
	parent, err := u.resolve(dir)
	if err != nil {
		return fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	if err := u.mkdirAll(parent); err != nil {
		return fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	target := path.Join(parent, base)
	var pr *os.Root
	switch hdr.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeSymlink:
		if pr, err = u.parent(parent); err != nil {
			return fmt.Errorf("entry %q: %w", hdr.Name, err)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		err = u.dir(pr, base, target, hdr)
	case tar.TypeReg:
		err = u.file(pr, base, target, hdr, r)
	case tar.TypeSymlink:
		err = u.symlink(pr, base, target, hdr)
	case tar.TypeLink:
		err = u.hardlink(target, hdr)
	case tar.TypeChar, tar.TypeBlock:
		u.skipped.Devices++
		u.gone[target] = true
		return nil
	case tar.TypeFifo:
		u.skipped.FIFOs++
		u.gone[target] = true
		return nil
	default:
		u.skipped.Other++
		return nil
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", hdr.Name, err)
	}
	u.mark(target)
	return nil
}

// mark records that the current layer wrote p.
func (u *unpacker) mark(p string) {
	u.made[p] = true
	delete(u.gone, p)
	for d := path.Dir(p); d != "." && !u.madeUnder[d]; d = path.Dir(d) {
		u.madeUnder[d] = true
	}
}

// resolve returns p with every symbolic link among its elements replaced
// by its target, read with the root as "/". Elements that do not exist
// are kept as they are (mkdirAll makes them). The result names no link
// and never climbs above the root.
func (u *unpacker) resolve(p string) (string, error) {
	var done []string
	todo := strings.Split(p, "/")
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := path.Join(append(done, c)...)
		if u.dirs[cur] {
			done = append(done, c)
			continue
		}
		fi, err := u.root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			done = append(done, c)
			continue
		}
		if err != nil {
			return "", err
		}
		switch {
		case fi.IsDir():
			u.dirs[cur] = true
			done = append(done, c)
		case fi.Mode()&fs.ModeSymlink != 0:
			hops++
			if hops > maxLinkHops {
				return "", fmt.Errorf("resolve %s: too many levels of symbolic links", p)
			}
			target, err := u.root.Readlink(cur)
			if err != nil {
				return "", err
			}
			if strings.HasPrefix(target, "/") {
				done = done[:0]
			}
			todo = append(strings.Split(target, "/"), todo...)
		default:
			// A file where a directory should be: the caller's mkdirAll
			// fails on it with a clear error.
			done = append(done, c)
		}
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// mkdirAll makes the resolved directory p and its parents.
func (u *unpacker) mkdirAll(p string) error {
	if p == "." || u.dirs[p] {
		return nil
	}
	if err := u.root.MkdirAll(p, 0o755); err != nil {
		return err
	}
	u.dirs[p] = true
	return nil
}

// replace clears the way for a new entry name in the directory r (target
// from the top): anything there goes, except a directory that a directory
// entry keeps (with its contents).
func (u *unpacker) replace(r *os.Root, name, target string, keepDir bool) (exists bool, err error) {
	fi, err := r.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if keepDir && fi.IsDir() {
		return true, nil
	}
	if fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		// Directories kept open or known may be under what goes; the
		// one we write in is not, but forget it too.
		clear(u.dirs)
		if r != u.last {
			u.closeLast()
		}
	}
	return false, r.RemoveAll(name)
}

// mode is the permission of an entry: the tar mode without setuid and
// setgid, the sticky bit kept.
func (u *unpacker) mode(hdr *tar.Header) fs.FileMode {
	if hdr.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 {
		u.skipped.SetID++
	}
	m := fs.FileMode(hdr.Mode & 0o777)
	if hdr.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// dir makes a directory. Its owner may always write and search it, so a
// later layer (or eviction) can change it without being root; the sandbox
// mounts the whole root read-only.
func (u *unpacker) dir(r *os.Root, name, target string, hdr *tar.Header) error {
	exists, err := u.replace(r, name, target, true)
	if err != nil {
		return err
	}
	if !exists {
		if err := r.Mkdir(name, 0o700); err != nil {
			return err
		}
	}
	u.dirs[target] = true
	return r.Chmod(name, u.mode(hdr)|0o700)
}

func (u *unpacker) file(r *os.Root, name, target string, hdr *tar.Header, content io.Reader) error {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	f, err := r.OpenFile(name, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		if _, err := u.replace(r, name, target, false); err != nil {
			return err
		}
		f, err = r.OpenFile(name, flags, 0o600)
	}
	if err != nil {
		return err
	}
	if _, err := io.CopyBuffer(f, content, u.buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(u.mode(hdr)); err != nil {
		f.Close()
		return err
	}
	// Keep the modification time: tools compare it (Python's .pyc files
	// record their source's).
	mtime := syscall.NsecToTimeval(hdr.ModTime.UnixNano())
	if hdr.ModTime.IsZero() {
		mtime = syscall.NsecToTimeval(time.Unix(0, 0).UnixNano())
	}
	if err := syscall.Futimes(int(f.Fd()), []syscall.Timeval{mtime, mtime}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (u *unpacker) symlink(r *os.Root, name, target string, hdr *tar.Header) error {
	if hdr.Linkname == "" {
		return errors.New("symbolic link with an empty target")
	}
	if _, err := u.replace(r, name, target, false); err != nil {
		return err
	}
	// The target is stored as it is: inside the sandbox the root is "/",
	// and unpacking reads it relative to the root (resolve).
	return r.Symlink(hdr.Linkname, name)
}

func (u *unpacker) hardlink(target string, hdr *tar.Header) error {
	lp, err := clean(hdr.Linkname)
	if err != nil {
		return &unsafeError{fmt.Sprintf("hard link %q to %q leaves the root", hdr.Name, hdr.Linkname)}
	}
	if lp == "." {
		return errors.New("hard link to the root")
	}
	ldir, lbase := path.Split(lp)
	lparent, err := u.resolve(ldir)
	if err != nil {
		return err
	}
	src := path.Join(lparent, lbase)
	if u.gone[src] {
		u.gone[target] = true
		return nil
	}
	fi, err := u.root.Lstat(src)
	if err != nil {
		return fmt.Errorf("hard link to %q: %w", hdr.Linkname, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("hard link to directory %q", hdr.Linkname)
	}
	if src == target {
		return nil
	}
	if _, err := u.replace(u.root, target, target, false); err != nil {
		return err
	}
	return u.root.Link(src, target)
}

// whiteout removes name in dir, unless the current layer made it.
func (u *unpacker) whiteout(dir, name string) error {
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return nil
	}
	parent, err := u.resolve(dir)
	if err != nil {
		return fmt.Errorf("whiteout %s%s: %w", dir, name, err)
	}
	target := path.Join(parent, name)
	if u.made[target] || u.madeUnder[target] {
		return nil
	}
	if _, err := u.root.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	u.forget()
	if err := u.root.RemoveAll(target); err != nil {
		return fmt.Errorf("whiteout %s%s: %w", dir, name, err)
	}
	return nil
}

// opaque empties dir of everything lower layers made in it.
func (u *unpacker) opaque(dir string) error {
	parent, err := u.resolve(dir)
	if err != nil {
		return fmt.Errorf("opaque directory %s: %w", dir, err)
	}
	fi, err := u.root.Lstat(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !fi.IsDir() {
		return err
	}
	u.forget()
	if err := u.clearLower(parent); err != nil {
		return fmt.Errorf("opaque directory %s: %w", dir, err)
	}
	return nil
}

// clearLower removes what lower layers made under dir, keeping the
// current layer's entries and the directories on the way to them.
func (u *unpacker) clearLower(dir string) error {
	f, err := u.root.Open(dir)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		c := path.Join(dir, n)
		if !u.made[c] && !u.madeUnder[c] {
			if err := u.root.RemoveAll(c); err != nil {
				return err
			}
			continue
		}
		// A directory this layer made or wrote into may still hold lower
		// entries.
		fi, err := u.root.Lstat(c)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			if err := u.clearLower(c); err != nil {
				return err
			}
		}
	}
	return nil
}
