package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// debianRoot builds a small Debian root filesystem from the machine's own
// files: apt and its methods, dpkg and the programs dpkg needs, their
// shared libraries (as ldd names them), their configuration, and an empty
// package database. The machine must be Debian (as CI's is).
func debianRoot(t *testing.T) string {
	t.Helper()
	programs := []string{"sh", "dash", "rm", "tar", "diff", "apt-get", "apt-config", "dpkg", "dpkg-deb", "dpkg-query",
		"dpkg-split", "ldconfig", "start-stop-daemon", "cat", "id"}
	root := t.TempDir()
	// Debian's merged /usr: /bin is /usr/bin and so on, as ELF
	// interpreters and scripts name them.
	for _, d := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.MkdirAll(filepath.Join(root, "usr", d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("usr/"+d, filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	copyIn := func(path string) {
		t.Helper()
		// The real directory, so that cp does not copy /bin over the link.
		dir, err := filepath.EvalSymlinks(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, dir, filepath.Base(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-RL", "--preserve=mode", path, dst).CombinedOutput(); err != nil {
			t.Fatalf("copy %s into the image: %v\n%s", path, err, out)
		}
	}
	libs := map[string]bool{}
	lib := regexp.MustCompile(`(/\S+) \(0x`)
	var paths []string
	for _, p := range programs {
		path, err := exec.LookPath(p)
		for _, dir := range []string{"/usr/sbin", "/usr/bin"} { // a PATH without sbin
			if err != nil {
				path, err = exec.LookPath(filepath.Join(dir, p))
			}
		}
		if err != nil {
			t.Fatalf("%s is not on this machine (a Debian machine with apt and dpkg): %v", p, err)
		}
		paths = append(paths, path)
	}
	methods, _ := filepath.Glob("/usr/lib/apt/methods/*")
	for _, path := range append(paths, methods...) {
		copyIn(path)
		out, _ := exec.Command("ldd", path).Output() // a static program or a link has none
		for _, m := range lib.FindAllStringSubmatch(string(out), -1) {
			libs[m[1]] = true
		}
	}
	for l := range libs {
		copyIn(l)
	}
	// dpkg's architecture tables, and apt's and dpkg's configuration.
	for _, p := range []string{"/usr/share/dpkg", "/etc/dpkg", "/etc/passwd", "/etc/group"} {
		copyIn(p)
	}
	// apt's configuration as a fresh image has it: none of the machine's
	// hooks.
	for _, d := range []string{"etc/apt/apt.conf.d", "etc/apt/preferences.d", "etc/apt/sources.list.d", "var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/apt/lists/partial",
		"var/cache/apt/archives/partial", "var/log/apt", "usr/local/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestBwrapImageSetupInstallsPackages: `apt-get install` in a setup
// command works in a Debian image, as root in the sandbox's user
// namespace over the job's writable layer, and the job's other commands
// find the package installed — while the image's root stays as it was.
// apt's drop to its _apt user cannot work where only root is mapped; the
// sandbox's apt configuration keeps it root (aptSandboxUser).
func TestBwrapImageSetupInstallsPackages(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skipf("no dpkg-deb: not a Debian machine (%v)", err)
	}
	pkg := t.TempDir()
	for name, content := range map[string]string{
		"DEBIAN/control": "Package: agentfix-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: agentfix <dev@example.com>\n" +
			"Description: a package a setup command installs\n",
		"usr/local/bin/agentfix-hello": "#!/bin/sh\necho hello from a package\n",
	} {
		p := filepath.Join(pkg, "tree", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(pkg, "agentfix-hello.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", filepath.Join(pkg, "tree"), deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, out)
	}
	root := debianRoot(t)
	o, _ := imageOptions(t, root)
	o.Image.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	o.ReadOnlyDirs = append(o.ReadOnlyDirs, pkg)
	b := newTestBwrap(t, o)

	res, err := b.Run(t.Context(), Command{Script: "apt-get install -y " + deb, Network: true})
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Output, "Setting up agentfix-hello (1.0)") {
		t.Fatalf("apt-get install in setup: %v, exit %d:\n%s", err, res.ExitCode, res.Output)
	}
	res, err = b.Run(t.Context(), Command{Script: "agentfix-hello; dpkg-query -W -f '${Status}\\n' agentfix-hello"})
	if err != nil || res.ExitCode != 0 || res.Output != "hello from a package\ninstall ok installed\n" {
		t.Errorf("the package after setup: %v, exit %d:\n%s", err, res.ExitCode, res.Output)
	}
	if _, err := os.Stat(filepath.Join(root, "usr/local/bin/agentfix-hello")); !os.IsNotExist(err) {
		t.Errorf("setup wrote into the image's root (stat: %v)", err)
	}
}
