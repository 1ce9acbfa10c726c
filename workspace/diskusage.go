package workspace

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// diskUsage returns the bytes of disk the files under dir occupy (allocated
// blocks, so sparse files count what they use). Entries it cannot read are
// skipped: the count is a limit check, not an inventory.
func diskUsage(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total
}
