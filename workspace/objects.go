package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
)

// Names of the object files copyObjects copies: loose objects (a directory
// named by the first two hex digits of the id, a file by the rest) and
// packs with their index and reverse index. Everything else under objects/
// is left behind: info/alternates (which would borrow objects from another
// repository), commit-graphs and multi-pack indexes (git works without
// them), .keep, .promisor and .bitmap files, and temporary files.
var (
	looseDir  = regexp.MustCompile(`^[0-9a-f]{2}$`)
	looseFile = regexp.MustCompile(`^([0-9a-f]{38}|[0-9a-f]{62})$`)
	packFile  = regexp.MustCompile(`^pack-([0-9a-f]{40}|[0-9a-f]{64})\.(pack|idx|rev)$`)
)

// copyObjects copies every object of the git dir src into the git dir dst,
// whose objects directory exists: each pack with its index (and reverse
// index) and each loose object, as a new file of its own. The copy goes
// through copy_file_range(2), which copies in the kernel and, on file
// systems with reflinks (btrfs, XFS), shares the blocks copy-on-write: a
// write to either file never reaches the other, unlike a hardlink, which
// is never made. Packs and loose objects are immutable, and the caller
// keeps src from being repacked meanwhile (the cache's shared lock), so the
// copy is consistent. A src that borrows objects through
// objects/info/alternates is refused: dst would lack them.
func copyObjects(src, dst string) error {
	from, to := filepath.Join(src, "objects"), filepath.Join(dst, "objects")
	if _, err := os.Stat(filepath.Join(from, "info", "alternates")); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("copy objects of %s: it borrows objects through objects/info/alternates", src)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("copy objects of %s: %w", src, err)
	}
	for _, e := range entries {
		var err error
		switch {
		case e.Name() == "pack" && e.IsDir():
			err = copyPacks(filepath.Join(from, "pack"), filepath.Join(to, "pack"))
		case looseDir.MatchString(e.Name()) && e.IsDir():
			err = copyMatching(filepath.Join(from, e.Name()), filepath.Join(to, e.Name()), looseFile.MatchString)
		}
		if err != nil {
			return fmt.Errorf("copy objects of %s: %w", src, err)
		}
	}
	return nil
}

// copyPacks copies the packs of the directory from that have both their
// .pack and .idx file.
func copyPacks(from, to string) error {
	complete := func(name string) bool {
		m := packFile.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		for _, ext := range []string{".pack", ".idx"} {
			if _, err := os.Stat(filepath.Join(from, "pack-"+m[1]+ext)); err != nil {
				return false
			}
		}
		return true
	}
	return copyMatching(from, to, complete)
}

// copyMatching copies the regular files of the directory from whose names
// match into the directory to, creating it.
func copyMatching(from, to string, match func(string) bool) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	made := false
	for _, e := range entries {
		if !e.Type().IsRegular() || !match(e.Name()) {
			continue
		}
		if !made {
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			made = true
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name()), 0o444); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the regular file from to a new file to with mode perm
// (git keeps objects read-only). An existing file to is an error: nothing
// is overwritten. io.Copy between two files uses copy_file_range(2).
func copyFile(from, to string, perm os.FileMode) (err error) {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(to)
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return nil
}
