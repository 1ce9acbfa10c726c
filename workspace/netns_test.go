package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

func TestSetupRules(t *testing.T) {
	host := []netip.Prefix{netip.MustParsePrefix("192.0.2.2/32"), netip.MustParsePrefix("192.0.2.0/24")}
	common := []string{
		"rule add pref 100 to 10.0.2.2/32 lookup main",
		"rule add pref 100 to 10.0.2.3/32 ipproto udp dport 53 lookup main",
		"rule add pref 100 to 10.0.2.3/32 ipproto tcp dport 53 lookup main",
		"rule add pref 200 to 0.0.0.0/8 prohibit",
		"rule add pref 200 to 10.0.0.0/8 prohibit",
		"rule add pref 200 to 100.64.0.0/10 prohibit",
		"rule add pref 200 to 127.0.0.0/8 prohibit",
		"rule add pref 200 to 169.254.0.0/16 prohibit",
		"rule add pref 200 to 172.16.0.0/12 prohibit",
		"rule add pref 200 to 192.0.0.0/24 prohibit",
		"rule add pref 200 to 192.168.0.0/16 prohibit",
		"rule add pref 200 to 198.18.0.0/15 prohibit",
		"rule add pref 200 to 224.0.0.0/4 prohibit",
		"rule add pref 200 to 240.0.0.0/4 prohibit",
		"rule add pref 200 to 192.0.2.2/32 prohibit",
		"rule add pref 200 to 192.0.2.0/24 prohibit",
	}
	tests := []struct {
		name     string
		egress   []egressDest
		narrowed bool
		extra    []string
	}{
		{"public internet", nil, false, nil},
		{"narrowed", []egressDest{{Addr: netip.MustParseAddr("198.51.100.7"), Port: 443}, {Addr: netip.MustParseAddr("198.51.100.8")}}, true, []string{
			"rule add pref 300 to 198.51.100.7/32 ipproto tcp dport 443 lookup main",
			"rule add pref 300 to 198.51.100.7/32 ipproto udp dport 443 lookup main",
			"rule add pref 300 to 198.51.100.8/32 lookup main",
			"rule add pref 400 to 0.0.0.0/0 prohibit",
		}},
		{"narrowed to nothing", nil, true, []string{"rule add pref 400 to 0.0.0.0/0 prohibit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := strings.Join(append(append([]string{}, common...), tt.extra...), "\n") + "\n"
			if diff := cmp.Diff(want, setupRules(host, tt.egress, tt.narrowed)); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostPrefixes(t *testing.T) {
	ipnet := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		n.IP = ip
		return n
	}
	got := hostPrefixes([]net.Addr{
		ipnet("127.0.0.1/8"), ipnet("::1/128"), ipnet("fd00::2/64"),
		ipnet("192.0.2.2/24"), ipnet("198.51.100.5/30"), ipnet("203.0.113.9/32"), ipnet("192.0.2.3/24"),
	})
	want := []netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("192.0.2.2/32"), netip.MustParsePrefix("192.0.2.3/32"),
		netip.MustParsePrefix("198.51.100.4/30"), netip.MustParsePrefix("198.51.100.5/32"),
		netip.MustParsePrefix("203.0.113.9/32"),
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("host prefixes (-want +got):\n%s", diff)
	}
}

func TestValidateSetupEgress(t *testing.T) {
	tests := []struct {
		entry string
		want  egressEntry
		err   string
	}{
		{entry: "proxy.golang.org", want: egressEntry{Host: "proxy.golang.org"}},
		{entry: "Deb.Debian.org.:443", want: egressEntry{Host: "deb.debian.org", Port: 443}},
		{entry: "151.101.2.132", want: egressEntry{Addr: netip.MustParseAddr("151.101.2.132")}},
		{entry: "151.101.2.132:80", want: egressEntry{Addr: netip.MustParseAddr("151.101.2.132"), Port: 80}},
		{entry: "https://proxy.golang.org", err: "want a host name"},
		{entry: "*.debian.org", err: "want a host name"},
		{entry: "example.com:0", err: "port"},
		{entry: "example.com:https", err: "port"},
		{entry: "[2001:db8::1]:443", err: "no IPv6"},
		{entry: "", err: "want a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			got, err := parseEgress([]string{tt.entry})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || ValidateSetupEgress([]string{tt.entry}) == nil {
					t.Errorf("parse %q: %v, %v; want an error with %q", tt.entry, got, err, tt.err)
				}
				return
			}
			if err != nil || len(got) != 1 || got[0] != tt.want {
				t.Errorf("parse %q = %+v, %v; want %+v", tt.entry, got, err, tt.want)
			}
		})
	}
}

// mapResolver answers from a fixed table and records the names asked.
type mapResolver struct {
	addrs map[string][]netip.Addr
	asked []string
}

func (r *mapResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.asked = append(r.asked, network+" "+host)
	a, ok := r.addrs[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

func TestResolveEgress(t *testing.T) {
	host := []netip.Prefix{netip.MustParsePrefix("192.0.2.2/32")}
	r := &mapResolver{addrs: map[string][]netip.Addr{
		"mirror.example":   {netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("10.1.2.3")},
		"internal.example": {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("169.254.169.254")},
		"myself.example":   {netip.MustParseAddr("192.0.2.2")},
	}}
	entries, err := parseEgress([]string{"mirror.example:443", "198.51.100.9"})
	if err != nil {
		t.Fatal(err)
	}
	dests, pins, err := resolveEgress(context.Background(), r, entries, host)
	if err != nil {
		t.Fatal(err)
	}
	wantDests := []egressDest{{netip.MustParseAddr("198.51.100.7"), 443}, {netip.MustParseAddr("198.51.100.9"), 0}}
	if diff := cmp.Diff(wantDests, dests, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("destinations (-want +got):\n%s", diff)
	}
	if pins != "198.51.100.7 mirror.example\n" {
		t.Errorf("pinned hosts %q, want only the public address of mirror.example", pins)
	}
	if diff := cmp.Diff([]string{"ip4 mirror.example"}, r.asked); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"internal.example", "myself.example", "10.0.0.1", "missing.example"} {
		entries, err := parseEgress([]string{bad})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := resolveEgress(context.Background(), r, entries, host); err == nil || !strings.Contains(err.Error(), "setup egress") {
			t.Errorf("egress %s: err = %v, want a setup egress error", bad, err)
		}
	}
}

func TestResolvConf(t *testing.T) {
	host := "# generated\nnameserver 10.255.255.53\nnameserver 127.0.0.53\nsearch  corp.example svc.cluster.local\noptions ndots:5 edns0\n"
	want := "nameserver 10.0.2.3\nsearch corp.example svc.cluster.local\noptions ndots:5 edns0\n"
	if got := string(resolvConf([]byte(host))); got != want {
		t.Errorf("resolv.conf %q, want %q", got, want)
	}
}

// internet is a network namespace the test creates, routed from the host
// through a veth pair, with public-looking addresses (TEST-NET-2,
// 198.51.100.0/24) standing in for the internet, and listeners in it.
type internet struct {
	ns string
	// hostAddr is the host's end of the veth pair: an address of this host.
	hostAddr netip.Addr
	// public are addresses on the namespace's loopback, routed from the
	// host; private are too, but in ranges setup never reaches.
	public, private []netip.Addr
}

// requireRoot skips t where it cannot create network namespaces.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test creates a network namespace and a veth pair (ip netns)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2) to create a network namespace")
	}
}

func randN(t *testing.T, n int64) int {
	t.Helper()
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	if err != nil {
		t.Fatal(err)
	}
	return int(v.Int64())
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// newInternet creates the namespace with random names and addresses (other
// test runs may do the same at once), retrying on a clash.
func newInternet(t *testing.T) *internet {
	t.Helper()
	requireRoot(t)
	var lastErr error
	for range 5 {
		var id [4]byte
		rand.Read(id[:])
		tag := hex.EncodeToString(id[:])
		link := 4 * randN(t, 32) // a /30 in 198.51.100.0/25
		in := &internet{
			ns:       "agentfix-" + tag,
			hostAddr: netip.AddrFrom4([4]byte{198, 51, 100, byte(link + 1)}),
			public:   []netip.Addr{netip.AddrFrom4([4]byte{198, 51, 100, byte(128 + randN(t, 63))}), netip.AddrFrom4([4]byte{198, 51, 100, byte(192 + randN(t, 63))})},
			private: []netip.Addr{
				netip.AddrFrom4([4]byte{10, 213, byte(randN(t, 256)), byte(1 + randN(t, 254))}),
				netip.AddrFrom4([4]byte{172, 29, byte(randN(t, 256)), byte(1 + randN(t, 254))}),
				netip.AddrFrom4([4]byte{192, 168, 213, byte(1 + randN(t, 254))}),
				netip.AddrFrom4([4]byte{100, 99, byte(randN(t, 256)), byte(1 + randN(t, 254))}),
				netip.AddrFrom4([4]byte{169, 254, byte(1 + randN(t, 250)), byte(1 + randN(t, 254))}),
			},
		}
		nsAddr := netip.AddrFrom4([4]byte{198, 51, 100, byte(link + 2)})
		hostIf, nsIf := "afh"+tag, "afn"+tag
		if err := ipCmd("netns", "add", in.ns); err != nil {
			t.Skipf("cannot create a network namespace here: %v", err)
		}
		t.Cleanup(func() { ipCmd("netns", "del", in.ns) })
		steps := [][]string{
			{"link", "add", hostIf, "type", "veth", "peer", "name", nsIf, "netns", in.ns},
			{"addr", "add", in.hostAddr.String() + "/30", "dev", hostIf},
			{"link", "set", hostIf, "up"},
			{"-n", in.ns, "link", "set", "lo", "up"},
			{"-n", in.ns, "addr", "add", nsAddr.String() + "/30", "dev", nsIf},
			{"-n", in.ns, "link", "set", nsIf, "up"},
			{"-n", in.ns, "route", "add", "default", "via", in.hostAddr.String()},
		}
		for _, a := range append(append([]netip.Addr{}, in.public...), in.private...) {
			steps = append(steps,
				[]string{"-n", in.ns, "addr", "add", a.String() + "/32", "dev", "lo"},
				[]string{"route", "add", a.String() + "/32", "via", nsAddr.String(), "dev", hostIf})
		}
		lastErr = nil
		for _, s := range steps {
			if lastErr = ipCmd(s...); lastErr != nil {
				break
			}
		}
		if lastErr == nil {
			return in
		}
		ipCmd("netns", "del", in.ns)
	}
	t.Fatalf("create the test's internet: %v", lastErr)
	return nil
}

// listen starts a TCP listener on addr inside the namespace: a socket
// stays in the namespace it was created in, so only its creation runs on
// a thread moved there.
func (in *internet) listen(t *testing.T, addr netip.Addr) net.Listener {
	t.Helper()
	ch := make(chan any, 1)
	go func() {
		// The thread is unlocked once it is back in the host's namespace:
		// one that ended would kill the sandboxes it once started (their
		// bwrap dies with the thread that forked it).
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer orig.Close()
		ns, err := os.Open("/run/netns/" + in.ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked and ends with the goroutine.
			ch <- fmt.Errorf("return to the host's namespace: %w", err)
			return
		}
		runtime.UnlockOSThread()
		if err != nil {
			ch <- err
			return
		}
		ch <- ln
	}()
	switch v := (<-ch).(type) {
	case net.Listener:
		serve(t, v)
		return v
	case error:
		t.Fatalf("listen in %s: %v", in.ns, v)
	}
	return nil
}

// serve accepts and closes connections until t ends.
func serve(t *testing.T, ln net.Listener) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// listenHost starts a listener on the host.
func listenHost(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatalf("listen on the host at %s: %v", addr, err)
	}
	serve(t, ln)
	return ln
}

// reachableFromHost fails t unless the host itself connects to addr: a
// target setup must not reach proves nothing if nothing could.
func reachableFromHost(t *testing.T, network, addr string) {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatalf("the host itself cannot reach %s %s: %v", network, addr, err)
	}
	c.Close()
}

// hostOwnAddrs returns this host's non-loopback addresses, at most one
// IPv4 and one IPv6 (not link-local), leaving out the test's veth ends.
func hostOwnAddrs(t *testing.T) []netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var v4, v6 []netip.Addr
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(ipn.IP)
		ip = ip.Unmap()
		switch {
		case ip.IsLoopback() || ip.IsLinkLocalUnicast() || netip.MustParsePrefix("198.51.100.0/24").Contains(ip):
		case ip.Is4():
			v4 = append(v4, ip)
		default:
			v6 = append(v6, ip)
		}
	}
	if len(v4) == 0 {
		t.Skip("this host has no non-loopback IPv4 address")
	}
	out := v4[:1]
	if len(v6) > 0 {
		out = append(out, v6[0])
	}
	return out
}

// probe runs the probe's dial in a setup command and reports whether it
// connected.
func probeDial(t *testing.T, r runner, network, addr string) (bool, string) {
	t.Helper()
	res := mustRun(t, r, Command{Script: fmt.Sprintf("./probe dial %s '%s'", network, addr), Network: true})
	return res.ExitCode == 0 && strings.Contains(res.Output, "connected"), res.Output
}

// TestBwrapSetupNetwork runs setup commands against real listeners: the
// test's internet is reached, by address and through the NAT's DNS
// forwarder by name; this host's loopback, its own addresses, its abstract
// unix sockets, private ranges and link-local addresses are not, though
// the host itself reaches every one of them.
func TestBwrapSetupNetwork(t *testing.T) {
	in := newInternet(t)
	dns := newTestDNS(t, map[string]netip.Addr{"internet.test.": in.public[0]})
	o := testOptions(t)
	buildProbe(t, o.Workspace)
	o.Slirp4netns = dns.slirpWrapper(t)
	b := newTestBwrap(t, o)

	pub := in.listen(t, in.public[0])
	port := pub.Addr().(*net.TCPAddr).Port
	t.Run("internet by address", func(t *testing.T) {
		if ok, out := probeDial(t, b, "tcp", pub.Addr().String()); !ok {
			t.Errorf("setup could not reach the internet at %s: %s", pub.Addr(), out)
		}
	})
	t.Run("internet by name", func(t *testing.T) {
		res := mustRun(t, b, Command{Script: "getent hosts internet.test", Network: true})
		if f := strings.Fields(res.Output); len(f) < 2 || f[0] != in.public[0].String() {
			t.Errorf("getent hosts internet.test: %q, want %s", res.Output, in.public[0])
		}
		if ok, out := probeDial(t, b, "tcp", fmt.Sprintf("internet.test:%d", port)); !ok {
			t.Errorf("setup could not reach internet.test:%d: %s", port, out)
		}
		if dns.queries() == 0 {
			t.Errorf("the host's resolver saw no query: the name did not go through the NAT's forwarder")
		}
	})

	loop := listenHost(t, "tcp", "127.0.0.1:0")
	loopPort := loop.Addr().(*net.TCPAddr).Port
	targets := []struct{ name, network, addr string }{
		{"host loopback", "tcp", loop.Addr().String()},
		{"host loopback through the NAT's gateway", "tcp", fmt.Sprintf("10.0.2.2:%d", loopPort)},
		{"the host's veth address", "tcp", listenHost(t, "tcp", netip.AddrPortFrom(in.hostAddr, 0).String()).Addr().String()},
	}
	for _, a := range hostOwnAddrs(t) {
		targets = append(targets, struct{ name, network, addr string }{"the host's own address " + a.String(), "tcp", listenHost(t, "tcp", netip.AddrPortFrom(a, 0).String()).Addr().String()})
	}
	var abstract [8]byte
	rand.Read(abstract[:])
	sock := "@agentfix-test-" + hex.EncodeToString(abstract[:])
	listenHost(t, "unix", sock)
	targets = append(targets, struct{ name, network, addr string }{"the host's abstract unix socket", "unix", sock})
	for _, a := range in.private {
		targets = append(targets, struct{ name, network, addr string }{"routed " + a.String(), "tcp", in.listen(t, a).Addr().String()})
	}
	for _, tt := range targets {
		t.Run("unreachable: "+tt.name, func(t *testing.T) {
			if !strings.HasPrefix(tt.addr, "10.0.2.2:") {
				reachableFromHost(t, tt.network, tt.addr)
			}
			if ok, out := probeDial(t, b, tt.network, tt.addr); ok {
				t.Errorf("setup reached %s %s: %s", tt.network, tt.addr, out)
			}
		})
	}
}

// TestBwrapSetupEgress narrows setup to one host and port: that name (as
// the worker resolved it, pinned in the sandbox) is reached, another port
// of it and another address are not.
func TestBwrapSetupEgress(t *testing.T) {
	in := newInternet(t)
	dns := newTestDNS(t, map[string]netip.Addr{"mirror.test.": in.public[0]})
	allowed := in.listen(t, in.public[0])
	otherPort := in.listen(t, in.public[0])
	otherHost := in.listen(t, in.public[1])
	o := testOptions(t)
	buildProbe(t, o.Workspace)
	o.SetupEgress = []string{fmt.Sprintf("mirror.test:%d", allowed.Addr().(*net.TCPAddr).Port)}
	o.SetupResolver = dns.resolver()
	b := newTestBwrap(t, o)

	if ok, out := probeDial(t, b, "tcp", fmt.Sprintf("mirror.test:%d", allowed.Addr().(*net.TCPAddr).Port)); !ok {
		t.Errorf("setup could not reach the allowed mirror.test: %s", out)
	}
	for _, addr := range []string{
		fmt.Sprintf("mirror.test:%d", otherPort.Addr().(*net.TCPAddr).Port),
		otherHost.Addr().String(),
	} {
		if ok, out := probeDial(t, b, "tcp", addr); ok {
			t.Errorf("setup reached %s outside its egress: %s", addr, out)
		}
	}
	if dns.queries() == 0 {
		t.Errorf("the worker did not resolve mirror.test with SetupResolver")
	}

	o.SetupEgress = []string{"10.1.2.3:80"}
	b = newTestBwrap(t, o)
	if _, err := b.Run(context.Background(), Command{Script: "true", Network: true}); err == nil || !strings.Contains(err.Error(), "setup egress") {
		t.Errorf("egress to a private address: err = %v, want a setup egress error", err)
	}
	o.SetupEgress = []string{"https://example.com/"}
	if _, err := NewBwrap(o); err == nil {
		t.Errorf("NewBwrap with a URL as egress: want an error")
	}
}

// TestBwrapSetupPublicDNS resolves a public name in setup through the
// host's own resolver, as `go mod download` or apt-get do.
func TestBwrapSetupPublicDNS(t *testing.T) {
	t.Parallel()
	const name = "deb.debian.org"
	if _, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", name); err != nil {
		t.Skipf("the host cannot resolve %s itself: %v", name, err)
	}
	b := newTestBwrap(t, testOptions(t))
	res := mustRun(t, b, Command{Script: "getent ahostsv4 " + name, Network: true})
	if res.ExitCode != 0 {
		t.Errorf("setup could not resolve %s: exit %d, %q", name, res.ExitCode, res.Output)
	}
}

// testDNS is a DNS server on a random loopback address of the host, port
// 53 (resolv.conf takes no port), answering A queries from a table.
type testDNS struct {
	addr  netip.Addr
	conn  net.PacketConn
	names map[string]netip.Addr
	count chan int
}

func newTestDNS(t *testing.T, names map[string]netip.Addr) *testDNS {
	t.Helper()
	var conn net.PacketConn
	var addr netip.Addr
	var err error
	for range 5 {
		addr = netip.AddrFrom4([4]byte{127, byte(100 + randN(t, 100)), byte(randN(t, 256)), byte(1 + randN(t, 254))})
		if conn, err = net.ListenPacket("udp", netip.AddrPortFrom(addr, 53).String()); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("listen for DNS: %v", err)
	}
	d := &testDNS{addr: addr, conn: conn, names: names, count: make(chan int, 1)}
	d.count <- 0
	t.Cleanup(func() { conn.Close() })
	go d.serve()
	return d
}

func (d *testDNS) queries() int {
	n := <-d.count
	d.count <- n
	return n
}

func (d *testDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		d.count <- <-d.count + 1
		resp := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		resp.EnableCompression()
		a, ok := d.names[strings.ToLower(q.Name.String())]
		if !ok {
			resp = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeNameError})
		}
		resp.StartQuestions()
		resp.Question(q)
		if ok && q.Type == dnsmessage.TypeA {
			resp.StartAnswers()
			resp.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: a.As4()})
		}
		out, err := resp.Finish()
		if err == nil {
			d.conn.WriteTo(out, from)
		}
	}
}

// resolver is a Go resolver that asks d.
func (d *testDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", netip.AddrPortFrom(d.addr, 53).String())
	}}
}

// slirpWrapper writes a slirp4netns that runs the real one in a mount
// namespace whose /etc/resolv.conf names d, so the NAT's DNS forwarder
// asks d as it would ask the host's resolver.
func (d *testDNS) slirpWrapper(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("slirp4netns")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	wrapper := filepath.Join(dir, "slirp4netns")
	script := fmt.Sprintf("#!/bin/sh\nexec unshare --mount --propagation private sh -c 'mount --bind %s /etc/resolv.conf && exec %s \"$@\"' slirp4netns \"$@\"\n", resolv, real)
	if err := errors.Join(
		os.WriteFile(resolv, []byte("nameserver "+d.addr.String()+"\n"), 0o644),
		os.WriteFile(wrapper, []byte(script), 0o755),
	); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// slirpChildren returns the pids of this process's slirp4netns children.
func slirpChildren(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || !strings.Contains(string(stat), "(slirp4netns)") || isZombie(string(stat)) {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		if f := strings.Fields(string(stat)[i+1:]); len(f) > 1 && f[1] == fmt.Sprint(os.Getpid()) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestBwrapSetupEnds checks that a setup command's processes and its NAT
// end with it: after a normal exit, a timeout and a cancel.
func TestBwrapSetupEnds(t *testing.T) {
	b := newTestBwrap(t, testOptions(t))
	ctx := context.Background()
	marker := fmt.Sprintf("agentfix-setup-bg-%d", os.Getpid())
	res := mustRun(t, b, Command{Script: treeScript(marker), Network: true})
	if res.ExitCode != 0 || processWithMarker(t, marker) || len(slirpChildren(t)) > 0 {
		t.Errorf("after exit: %+v, background process alive %v, slirp4netns %v", res, processWithMarker(t, marker), slirpChildren(t))
	}
	res = mustRun(t, b, Command{Script: treeScript(marker) + "; wait", Network: true, Timeout: 2 * time.Second})
	if !res.TimedOut || processWithMarker(t, marker) || len(slirpChildren(t)) > 0 {
		t.Errorf("after timeout: %+v, background process alive %v, slirp4netns %v", res, processWithMarker(t, marker), slirpChildren(t))
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(cctx, Command{Script: treeScript(marker) + "; wait", Network: true})
		done <- err
	}()
	for !processWithMarker(t, marker) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel: %v, want context.Canceled", err)
	}
	if processWithMarker(t, marker) || len(slirpChildren(t)) > 0 {
		t.Errorf("after cancel: background process alive %v, slirp4netns %v", processWithMarker(t, marker), slirpChildren(t))
	}
}

// TestBwrapSetupIdentity checks that setup runs as the same user and
// group as the agent's commands, though bwrap starts as root of setup's
// user namespace.
func TestBwrapSetupIdentity(t *testing.T) {
	t.Parallel()
	b := newTestBwrap(t, testOptions(t))
	want := fmt.Sprintf("%d %d\n", os.Getuid(), os.Getgid())
	for _, network := range []bool{false, true} {
		if res := mustRun(t, b, Command{Script: `echo "$(id -u) $(id -g)"`, Network: network}); res.Output != want {
			t.Errorf("network %v: uid and gid %q, want %q", network, res.Output, want)
		}
	}
}
