package workspace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/agentfix/agentfix/internal/proc"
	"golang.org/x/sys/unix"
)

// slirp4netns's virtual network (its default --cidr 10.0.2.0/24): the
// sandbox is 10.0.2.100, the gateway 10.0.2.2 (the host's loopback, which
// --disable-host-loopback refuses) and the DNS forwarder 10.0.2.3.
var (
	slirpGateway = netip.MustParseAddr("10.0.2.2")
	slirpDNS     = netip.MustParseAddr("10.0.2.3")
)

// blockedV4 are the IPv4 destinations setup never reaches, whatever
// SetupEgress says: this host, private networks, carrier-grade NAT,
// link-local (cloud metadata), IETF special-purpose blocks, benchmarking,
// multicast and reserved space.
var blockedV4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// Rule priorities in the setup namespace. Rules are looked up before any
// routing table (after "local", priority 0, which holds only the
// namespace's own addresses), so a blocked range is blocked however
// specific the routes are: the tap's on-link 10.0.2.0/24 route does not
// open 10/8.
const (
	prefAllowNAT  = 100 // the gateway (route validation) and the DNS forwarder
	prefBlock     = 200 // blockedV4 and the host's own addresses and subnets
	prefEgress    = 300 // SetupEgress destinations
	prefEgressEnd = 400 // everything else, when SetupEgress is set
)

// egressDest is one IPv4 destination of a narrowed egress; Port 0 means
// every port.
type egressDest struct {
	Addr netip.Addr
	Port uint16
}

// setupRules returns the `ip -4 -batch` input that confines a setup
// namespace: the NAT's gateway and DNS forwarder allowed, blockedV4 and
// host (this machine's addresses and the subnets they sit on) prohibited,
// and, when narrowed, only egress allowed beyond that. IPv6 is prohibited
// as a whole by the prelude (slirp4netns runs without IPv6).
func setupRules(host []netip.Prefix, egress []egressDest, narrowed bool) string {
	var b strings.Builder
	rule := func(pref int, spec string) {
		fmt.Fprintf(&b, "rule add pref %d %s\n", pref, spec)
	}
	rule(prefAllowNAT, "to "+netip.PrefixFrom(slirpGateway, 32).String()+" lookup main")
	for _, proto := range []string{"udp", "tcp"} {
		rule(prefAllowNAT, "to "+netip.PrefixFrom(slirpDNS, 32).String()+" ipproto "+proto+" dport 53 lookup main")
	}
	for _, p := range blockedV4 {
		rule(prefBlock, "to "+p.String()+" prohibit")
	}
	for _, p := range host {
		rule(prefBlock, "to "+p.String()+" prohibit")
	}
	if !narrowed {
		return b.String()
	}
	for _, d := range egress {
		to := "to " + netip.PrefixFrom(d.Addr, 32).String()
		if d.Port == 0 {
			rule(prefEgress, to+" lookup main")
			continue
		}
		for _, proto := range []string{"tcp", "udp"} {
			rule(prefEgress, to+" ipproto "+proto+" dport "+strconv.Itoa(int(d.Port))+" lookup main")
		}
	}
	rule(prefEgressEnd, "to 0.0.0.0/0 prohibit")
	return b.String()
}

// hostPrefixes returns this machine's IPv4 addresses (as /32) and the
// subnets they sit on, from every interface, sorted and without
// duplicates. Loopback is left out: blockedV4 covers 127/8.
func hostPrefixes(addrs []net.Addr) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		addr, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		addr = addr.Unmap()
		ones, _ := ipn.Mask.Size()
		if !addr.Is4() || addr.IsLoopback() {
			continue
		}
		out = append(out, netip.PrefixFrom(addr, 32))
		if ones > 0 && ones < 32 {
			out = append(out, netip.PrefixFrom(addr, ones).Masked())
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// blockedAddr reports whether setup can never reach a: it is in blockedV4
// or host.
func blockedAddr(a netip.Addr, host []netip.Prefix) bool {
	for _, p := range slices.Concat(blockedV4, host) {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Resolver looks up host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// egressEntry is one parsed Options.SetupEgress entry: a host name or an
// IPv4 address, with an optional port.
type egressEntry struct {
	Host string
	Addr netip.Addr // set when the entry is an address
	Port uint16
}

// ValidateSetupEgress reports the first entry of SetupEgress that is not a
// host name or IPv4 address with an optional port (`proxy.golang.org`,
// `deb.debian.org:443`, `151.101.2.132:80`).
func ValidateSetupEgress(entries []string) error {
	_, err := parseEgress(entries)
	return err
}

// parseEgress parses the SetupEgress entries; see ValidateSetupEgress.
func parseEgress(entries []string) ([]egressEntry, error) {
	var out []egressEntry
	for _, raw := range entries {
		e, err := parseEgressEntry(strings.TrimSpace(raw))
		if err != nil {
			return nil, fmt.Errorf("setup egress %q: %w", raw, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseEgressEntry(s string) (egressEntry, error) {
	var e egressEntry
	if strings.ContainsAny(s, "/@?#*") {
		return e, fmt.Errorf("want a host name or IPv4 address, optionally with :port (no scheme, path or wildcard)")
	}
	host := s
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return e, fmt.Errorf("port %q is not a number from 1 to 65535", p)
		}
		host, e.Port = h, uint16(n)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if !addr.Is4() {
			return e, fmt.Errorf("setup has no IPv6 egress; give an IPv4 address or a host name")
		}
		e.Addr = addr
		return e, nil
	}
	if !validHostName(host) {
		return e, fmt.Errorf("want a host name or IPv4 address, optionally with :port (no scheme, path or wildcard)")
	}
	e.Host = strings.ToLower(strings.TrimSuffix(host, "."))
	return e, nil
}

// validHostName reports whether s is a DNS name of letters, digits,
// hyphens and dots.
func validHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// resolveEgress turns entries into destinations and the /etc/hosts lines
// that pin each name to the addresses allowed for it, so the sandbox
// connects to exactly the addresses the rules open. Addresses that are
// blocked anyway are dropped; an entry left with none is an error.
func resolveEgress(ctx context.Context, r Resolver, entries []egressEntry, host []netip.Prefix) ([]egressDest, string, error) {
	var dests []egressDest
	var hosts strings.Builder
	for _, e := range entries {
		addrs := []netip.Addr{e.Addr}
		name := e.Host
		if name != "" {
			var err error
			addrs, err = r.LookupNetIP(ctx, "ip4", name)
			if err != nil {
				return nil, "", fmt.Errorf("setup egress: resolve %s: %w", name, err)
			}
		} else {
			name = e.Addr.String()
		}
		var kept []netip.Addr
		for _, a := range addrs {
			if a = a.Unmap(); a.Is4() && !blockedAddr(a, host) {
				kept = append(kept, a)
			}
		}
		if len(kept) == 0 {
			return nil, "", fmt.Errorf("setup egress: %s has no public IPv4 address (%v); setup never reaches this host, private networks or link-local addresses", name, addrs)
		}
		for _, a := range kept {
			dests = append(dests, egressDest{Addr: a, Port: e.Port})
			if e.Host != "" {
				fmt.Fprintf(&hosts, "%s %s\n", a, e.Host)
			}
		}
	}
	return dests, hosts.String(), nil
}

// resolvConf returns the sandbox's /etc/resolv.conf for setup: the NAT's
// DNS forwarder (which asks the host's resolver) with the host's search
// and options lines.
func resolvConf(host []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "nameserver %s\n", slirpDNS)
	sc := bufio.NewScanner(bytes.NewReader(host))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && (f[0] == "search" || f[0] == "domain" || f[0] == "options") {
			b.WriteString(strings.Join(f, " ") + "\n")
		}
	}
	return b.Bytes()
}

// setupNetwork holds the tools a setup command's network needs. It is
// built once per sandbox.
type setupNetwork struct {
	unshare, sh, ip, slirp string
	egress                 []egressEntry
	narrowed               bool
	resolver               Resolver
}

// netPrelude runs in the new user and network namespace, as its root:
// with ip(8) at the path its first argument gives (the command's PATH is
// the sandbox's, an image's maybe), it installs the IPv4 rules from the
// fd its second argument names and prohibits IPv6 (unless the kernel has
// none), then execs the rest (bwrap, or the image's overlay prelude).
// Nothing of the command is interpolated into it.
const netPrelude = `ip=$1 fd=$2; shift 2
"$ip" -4 -batch "/dev/fd/$fd" || exit
{ "$ip" -6 rule add pref 500 prohibit || [ ! -e /proc/sys/net/ipv6 ]; } || exit
eval "exec $fd<&-"
exec "$@"`

// newSetupNetwork finds the programs of setup's network and checks o's
// SetupEgress.
func newSetupNetwork(o Options) (*setupNetwork, error) {
	n := &setupNetwork{resolver: o.SetupResolver, narrowed: len(o.SetupEgress) > 0}
	if n.resolver == nil {
		n.resolver = net.DefaultResolver
	}
	var err error
	if n.egress, err = parseEgress(o.SetupEgress); err != nil {
		return nil, err
	}
	slirp := o.Slirp4netns
	if slirp == "" {
		slirp = "slirp4netns"
	}
	for _, p := range []struct {
		dst          *string
		name, pkgmsg string
	}{
		{&n.unshare, "unshare", "util-linux"},
		{&n.sh, "sh", "dash"},
		{&n.ip, "ip", "iproute2"},
		{&n.slirp, slirp, "slirp4netns"},
	} {
		if *p.dst, err = exec.LookPath(p.name); err != nil {
			return nil, fmt.Errorf("setup network: %w (install %s)", err, p.pkgmsg)
		}
	}
	return n, nil
}

// netRun is the network of one setup command, from its preparation to
// the end of its NAT.
type netRun struct {
	n *setupNetwork
	// Child ends, passed to the sandbox and closed in the worker once it
	// started.
	rules, infoW, blockR, resolv, hosts *os.File
	// Worker ends.
	infoR, blockW *os.File
	slirp         *exec.Cmd
	slirpOut      *HeadTail
	exitW         *os.File
	// fds are the descriptor numbers of the child ends in the sandbox's
	// process (see fdList).
	rulesFD, infoFD, blockFD, resolvFD, hostsFD int
}

// prepare builds the rules, resolv.conf and hosts of one setup command and
// the pipes that synchronise it with the NAT; fds numbers them in the
// sandbox's process.
func (n *setupNetwork) prepare(ctx context.Context, fds *fdList) (_ *netRun, err error) {
	ifAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("setup network: host addresses: %w", err)
	}
	host := hostPrefixes(ifAddrs)
	var dests []egressDest
	var pins string
	if n.narrowed {
		if dests, pins, err = resolveEgress(ctx, n.resolver, n.egress, host); err != nil {
			return nil, err
		}
	}
	r := &netRun{n: n}
	defer func() {
		if err != nil {
			r.closeAll()
		}
	}()
	if r.rules, err = dataFile("agentfix-setup-rules", []byte(setupRules(host, dests, n.narrowed))); err != nil {
		return nil, err
	}
	hostResolv, _ := os.ReadFile("/etc/resolv.conf")
	if r.resolv, err = dataFile("agentfix-resolv.conf", resolvConf(hostResolv)); err != nil {
		return nil, err
	}
	if pins != "" {
		hostHosts, _ := os.ReadFile("/etc/hosts")
		data := slices.Concat(hostHosts, []byte("\n# setup egress, pinned by agentfix\n"+pins))
		if r.hosts, err = dataFile("agentfix-hosts", data); err != nil {
			return nil, err
		}
	}
	if r.infoR, r.infoW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("setup network: %w", err)
	}
	if r.blockR, r.blockW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("setup network: %w", err)
	}
	r.rulesFD = fds.add(r.rules)
	r.infoFD = fds.add(r.infoW)
	r.blockFD = fds.add(r.blockR)
	r.resolvFD = fds.add(r.resolv)
	if r.hosts != nil {
		r.hostsFD = fds.add(r.hosts)
	}
	return r, nil
}

// prelude is the network's part of what runs before bwrap, in the new
// user and network namespace (see isolate).
func (r *netRun) prelude() []string {
	return []string{r.n.sh, "-c", netPrelude, "agentfix-setup-net", r.n.ip, strconv.Itoa(r.rulesFD)}
}

// bwrapArgs are bwrap's arguments for the setup network: share the
// prepared namespace, report the child and wait for the NAT, and name
// resolution through the NAT.
func (r *netRun) bwrapArgs() []string {
	args := []string{
		"--share-net",
		"--info-fd", strconv.Itoa(r.infoFD),
		"--block-fd", strconv.Itoa(r.blockFD),
		"--ro-bind-data", strconv.Itoa(r.resolvFD), "/etc/resolv.conf",
	}
	if r.hosts != nil {
		args = append(args, "--ro-bind-data", strconv.Itoa(r.hostsFD), "/etc/hosts")
	}
	return args
}

// started attaches the NAT once bwrap runs in the prepared namespace
// (pid is the sandbox's process, which execs from prlimit to unshare to
// the prelude to bwrap) and then lets the command start. When bwrap ends
// before it reports a child, started returns nil and bwrap's exit says
// why.
func (r *netRun) started(ctx context.Context, pid int) error {
	for _, f := range []*os.File{r.rules, r.infoW, r.blockR, r.resolv, r.hosts} {
		if f != nil {
			f.Close()
		}
	}
	info, err := io.ReadAll(io.LimitReader(r.infoR, 64<<10))
	if err != nil {
		return fmt.Errorf("setup network: read bwrap's info: %w", err)
	}
	var rec struct {
		ChildPID int `json:"child-pid"`
	}
	if json.Unmarshal(info, &rec) != nil || rec.ChildPID == 0 {
		return nil
	}
	if err := checkNamespaces(pid); err != nil {
		return err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("setup network: %w", err)
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return fmt.Errorf("setup network: %w", err)
	}
	r.exitW = exitW
	r.slirpOut = NewHeadTail(4 << 10)
	// slirp4netns joins the namespaces of pid (a pid cannot be reused
	// while the worker has not reaped its child). fds 3 and 4 in it are
	// ready and exit.
	cmd := proc.Command(ctx, nil, r.n.slirp,
		"--configure", "--mtu=65520", "--disable-host-loopback",
		"--enable-sandbox", "--enable-seccomp",
		"--ready-fd=3", "--exit-fd=4",
		strconv.Itoa(pid), "tap0")
	cmd.ExtraFiles = []*os.File{readyW, exitR}
	cmd.Stdout, cmd.Stderr = r.slirpOut, r.slirpOut
	cmd.Env = []string{}
	err = cmd.Start()
	readyW.Close()
	exitR.Close()
	if err != nil {
		return fmt.Errorf("setup network: start slirp4netns: %w", err)
	}
	r.slirp = cmd
	var b [1]byte
	if n, _ := readyR.Read(b[:]); n != 1 {
		return fmt.Errorf("setup network: slirp4netns did not configure the namespace: %s", strings.TrimSpace(r.slirpOut.String()))
	}
	if _, err := r.blockW.Write([]byte{1}); err != nil {
		return fmt.Errorf("setup network: release the sandbox: %w", err)
	}
	return nil
}

// checkNamespaces checks that the network and user namespaces of pid are
// new ones, not the worker's.
func checkNamespaces(pid int) error {
	for _, ns := range []string{"net", "user"} {
		theirs, err1 := os.Stat(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		ours, err2 := os.Stat("/proc/self/ns/" + ns)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("setup network: %w", err)
		}
		if os.SameFile(theirs, ours) {
			return fmt.Errorf("setup network: the sandbox's %s namespace is the worker's own", ns)
		}
	}
	return nil
}

// stop ends the NAT and releases everything. The command is over, so
// slirp4netns is killed rather than asked to exit, which costs it tens of
// milliseconds; its exit fd is for a worker that dies.
func (r *netRun) stop() {
	r.closeAll()
	if r.slirp != nil {
		proc.KillGroup(r.slirp.Process.Pid)
		r.slirp.Wait()
	}
}

// closeAll closes every file of r that is still open.
func (r *netRun) closeAll() {
	for _, f := range []*os.File{r.rules, r.infoW, r.blockR, r.resolv, r.hosts, r.infoR, r.blockW, r.exitW} {
		if f != nil {
			f.Close()
		}
	}
}

// dataFile returns an anonymous in-memory file holding data, positioned at
// its start.
func dataFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd %s: %w", name, err)
	}
	return f, nil
}

// fdList numbers the extra files of a sandbox process: the first is fd 3.
type fdList struct{ files []*os.File }

// add appends f and returns its descriptor number in the child.
func (l *fdList) add(f *os.File) int {
	l.files = append(l.files, f)
	return 2 + len(l.files)
}
