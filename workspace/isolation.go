package workspace

import (
	"context"
	"os"
	"strconv"
)

// isolation is what one bwrap command gets beyond its mounts: a user
// namespace that cannot create further ones, the seccomp filter, and, for
// a setup command, a network namespace of its own (netns.go).
type isolation struct {
	// prefix runs between prlimit and bwrap.
	prefix []string
	// args are bwrap's arguments, after its mounts.
	args    []string
	seccomp *os.File
	net     *netRun
}

// isolate prepares c's isolation; fds numbers the files it passes to the
// sandbox's process.
func (b *Bwrap) isolate(ctx context.Context, c Command, fds *fdList) (*isolation, error) {
	iso := &isolation{args: []string{"--unshare-user", "--disable-userns"}}
	// NewBwrap always compiles the filter; only a test leaves it out.
	if b.seccomp != nil {
		f, err := dataFile("agentfix-seccomp", b.seccomp)
		if err != nil {
			return nil, err
		}
		iso.seccomp = f
		iso.args = append(iso.args, "--seccomp", strconv.Itoa(fds.add(f)))
	}
	if !c.Network {
		return iso, nil
	}
	var err error
	if iso.net, err = b.network.prepare(ctx, fds); err != nil {
		iso.close()
		return nil, err
	}
	iso.prefix = iso.net.prefix()
	iso.args = append(iso.args, iso.net.bwrapArgs()...)
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
	if i.seccomp != nil {
		i.seccomp.Close()
	}
}
