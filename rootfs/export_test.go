package rootfs

// SetWaitHook makes c call f whenever a Get waits for a pull of the same
// digest by another Get or another process, so tests can synchronise on
// it.
func SetWaitHook(c *Cache, f func(digest string)) { c.onWait = f }
