package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// minInodeCharge is the least disk use counted for any entry: one block,
// so that many empty files weigh what their inodes and directory entries
// cost the file system.
const minInodeCharge = 4096

// diskUse is what a tree occupies.
type diskUse struct {
	bytes  int64
	inodes int64
}

// diskUsage measures the files under dir, for the disk limit where there is
// no job disk: the blocks each entry has allocated (so sparse files count
// what they use), at least minInodeCharge each, and the number of entries.
// An entry it cannot read (a directory a command made unreadable to the
// worker, say) is an error: what it holds is unknown, so the caller counts
// it as over the limit.
func diskUsage(dir string) (diskUse, error) {
	var u diskUse
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil {
			var info fs.FileInfo
			if info, err = d.Info(); err == nil {
				u.add(info)
			}
		}
		// An entry removed during the walk holds nothing.
		if errors.Is(err, fs.ErrNotExist) && path != dir {
			return nil
		}
		return err
	})
	if err != nil {
		return u, fmt.Errorf("measure %s: %w", dir, err)
	}
	return u, nil
}

// add counts one entry.
func (u *diskUse) add(info fs.FileInfo) {
	size := info.Size()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		size = st.Blocks * 512
	}
	u.bytes += max(size, minInodeCharge)
	u.inodes++
}
