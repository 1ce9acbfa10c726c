package workspace

import (
	"context"
	"os"
	"slices"
	"strconv"
)

// isolation is what one bwrap command gets beyond its mounts: a user
// namespace that cannot create further ones, the seccomp filter, for a
// setup command a network namespace of its own (netns.go), and with an
// image the overlay bwrap makes its root (image.go).
type isolation struct {
	// prefix runs between prlimit and bwrap.
	prefix []string
	// args are bwrap's arguments, after its mounts.
	args    []string
	seccomp *os.File
	net     *netRun
	overlay *overlayRun
}

// isolate prepares c's isolation; fds numbers the files it passes to the
// sandbox's process. A setup network and an image's overlay share one user
// namespace made before bwrap (`unshare --user --map-root-user` with --net,
// --mount or both), whose root runs the network's prelude and then the
// overlay's; bwrap then runs its command as the worker's uid and gid,
// except that setup in an image runs as root (uid and gid 0), which owns
// the image's files and writes its layer.
func (b *Bwrap) isolate(ctx context.Context, c Command, fds *fdList) (_ *isolation, err error) {
	iso := &isolation{args: []string{"--unshare-user", "--disable-userns"}}
	defer func() {
		if err != nil {
			iso.close()
		}
	}()
	// NewBwrap always compiles the filter; only a test leaves it out.
	if b.seccomp != nil {
		f, err := dataFile("agentfix-seccomp", b.seccomp)
		if err != nil {
			return nil, err
		}
		iso.seccomp = f
		iso.args = append(iso.args, "--seccomp", strconv.Itoa(fds.add(f)))
	}
	// The overlay's file is numbered before the network's: the prelude
	// closes it, and dash's redirections take single-digit fds only.
	if b.image != nil {
		if iso.overlay, err = b.image.prepare(c.Network, fds); err != nil {
			return nil, err
		}
	}
	var unshare, preludes []string
	if c.Network {
		if iso.net, err = b.network.prepare(ctx, fds); err != nil {
			return nil, err
		}
		unshare = append(unshare, "--net")
		preludes = append(preludes, iso.net.prelude()...)
		iso.args = append(iso.args, iso.net.bwrapArgs()...)
	}
	if iso.overlay != nil {
		unshare = append(unshare, "--mount")
		preludes = append(preludes, iso.overlay.prelude(b.network.sh)...)
	}
	if len(unshare) == 0 {
		return iso, nil
	}
	iso.prefix = slices.Concat([]string{b.network.unshare, "--user", "--map-root-user"}, unshare, []string{"--"}, preludes)
	uid, gid := os.Getuid(), os.Getgid()
	if b.image != nil && c.Network {
		uid, gid = 0, 0
	}
	iso.args = append(iso.args, "--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid))
	return iso, nil
}

// started is the process hook of c: the setup network's, if any.
func (i *isolation) started() func(ctx context.Context, pid int) error {
	if i.net == nil {
		return nil
	}
	return i.net.started
}

// close ends the NAT and releases the files.
func (i *isolation) close() {
	if i.net != nil {
		i.net.stop()
	}
	if i.overlay != nil {
		i.overlay.close()
	}
	if i.seccomp != nil {
		i.seccomp.Close()
	}
}
