package tools

import (
	"strings"
	"testing"
)

func TestRefusal(t *testing.T) {
	refused := []string{
		"vim main.go",
		"vi x",
		"nano README.md",
		"emacs -nw x",
		"/usr/bin/vim x",
		"less calc.go",
		"git log | less",
		"cat f | more",
		"top",
		"htop",
		"man ls",
		"watch ls",
		"python",
		"python3",
		"python3.12",
		"ipython",
		"node",
		"python3 -i repro.py",
		"tail -f server.log",
		"tail -n 5 -f log",
		"git rebase -i HEAD~2",
		"git -C sub rebase --interactive main",
		"git add -p",
		"git checkout --patch calc.go",
		"git commit",
		"git commit --amend",
		"git mergetool",
		"cd calc && vim calc.go",
		"sudo vim x",
		"FOO=1 vim x",
		"env FOO=1 less x",
		"timeout 5 top",
		"nohup watch date &",
		"echo $(vim x)",
		"ls; less y",
		"for f in *.go; do vim $f; done",
		"if true; then nano x; fi",
		"tmux",
		"(cd sub; less x)",
		"cat x && `less y`",
	}
	allowed := []string{
		"make test",
		"make",
		"cat lessons.txt",
		"cat less.go",
		"ls more/",
		"grep -rn vim .",
		"echo vim",
		"echo 'less is more'",
		"moreutils --version",
		"topology",
		"python3 script.py",
		"python -c 'print(1)'",
		"python3 -m pytest -q",
		"echo 'print(1)' | python3",
		"python3 <<'EOF'\nprint(1)\nEOF",
		"python3 - <<EOF\nprint(2)\nEOF",
		"git commit -m 'Fix Add'",
		"git commit -am fix",
		"git commit -mfix-interactive",
		"git commit --message=fix",
		"git commit --amend --no-edit",
		"git log --oneline | head",
		"git diff",
		"git rebase main",
		"git add -A",
		"tail -n 20 log",
		"go test ./...",
		"npm run top",
		"sed -i 's/less/more/' f",
		"cat <<'EOF' > notes.md\nless is more\nvim\ntop\nEOF",
		"cat <<-EOF > x.sh\n\tvim\n\tEOF\nls",
		"ed -s file <<'EOF'\n1d\nw\nEOF",
		"ls > less",
		"ls 2>&1 | grep more",
		"echo hi >> vim.log",
		"# vim is not needed\nls",
		"echo \"top\"",
		"find . -name '*.go' | xargs grep -n less",
	}
	for _, script := range refused {
		t.Run("refused/"+script, func(t *testing.T) {
			if got := refusal(script, false); got == "" {
				t.Errorf("refusal(%q) = \"\", want a refusal", script)
			}
		})
	}
	for _, script := range allowed {
		t.Run("allowed/"+script, func(t *testing.T) {
			if got := refusal(script, false); got != "" {
				t.Errorf("refusal(%q) = %q, want it allowed", script, got)
			}
		})
	}
}

func TestRefusalMessages(t *testing.T) {
	var report strings.Builder
	for _, script := range []string{"vim calc.go", "less calc.go", "top", "man ls", "python3", "git commit", "git rebase -i HEAD~3", "tail -f log", "watch ls"} {
		report.WriteString(script + ":\n\t" + refusal(script, false) + "\n")
	}
	report.WriteString("vim calc.go (text mode):\n\t" + refusal("vim calc.go", true) + "\n")
	golden(t, "refusals", report.String())
}
