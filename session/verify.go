package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfix/agentfix/internal/copytree"
	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/proof"
	"github.com/agentfix/agentfix/tools"
	"github.com/agentfix/agentfix/workspace"
)

// BaselineCache keeps the base commit's runs of test commands, so the next
// job of a repository on the same base does not run them again. The worker
// keeps them in Redis; nil keeps none.
type BaselineCache interface {
	Baseline(ctx context.Context, key string) (*tools.TestResult, *proof.Run, bool)
	SaveBaseline(ctx context.Context, key string, t tools.TestResult, r proof.Run)
}

// verifier runs the repository's test command the way the pull request
// will hold the change (tools.Verifier): each run in a fresh sandbox over a
// fresh checkout of the base commit from the private git dir, with the
// change applied, and a copy of the caches as setup left them — never the
// agent's working copy, HOME or caches. It keeps the base commit's run (the
// baseline) to compare each run with, and proves the change's tests by
// running them on the base commit's code.
type verifier struct {
	o       Options
	wt      *workspace.WorkTree
	scratch string // where the fresh checkouts go
	caches  string // the caches after setup
	timeout time.Duration

	mu       sync.Mutex
	n        int // checkouts made
	baseline *tools.TestResult
	baseRun  *proof.Run
}

// newVerifier snapshots the caches setup left (a copy, reflinked where the
// file system can) for the runs to start from.
func newVerifier(ctx context.Context, o Options, wt *workspace.WorkTree) (*verifier, error) {
	scratch, err := os.MkdirTemp(o.ScratchDir, "verify-")
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	v := &verifier{o: o, wt: wt, scratch: scratch, caches: filepath.Join(scratch, "caches"), timeout: o.Settings.TestTimeout}
	if err := copytree.Copy(ctx, wt.CacheDir(), v.caches); err != nil {
		v.close()
		return nil, fmt.Errorf("verifier: keep the caches setup left: %w", err)
	}
	return v, nil
}

// close removes the verifier's checkouts and caches.
func (v *verifier) close() {
	if err := workspace.RemoveJobDir(v.scratch); err != nil {
		v.o.Logger.Warn("remove the verifier's checkouts", logattr.Err, err)
	}
}

// baselineKey names the baseline of a repository, a base commit, an
// environment and a test command.
func (v *verifier) baselineKey() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{v.o.Task.Repo, v.wt.Base(), v.o.env.key(), v.o.Settings.Test}, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// runBaseline runs the test command on the base commit, or takes its run
// from the cache. A baseline that cannot run leaves the comparisons
// without one; it never ends the run.
func (v *verifier) runBaseline(ctx context.Context) {
	key := v.baselineKey()
	if c := v.o.Baselines; c != nil {
		if t, r, ok := c.Baseline(ctx, key); ok {
			v.baseline, v.baseRun = t, r
			return
		}
	}
	t, r, err := v.run(ctx, "", v.o.Settings.Test)
	if err != nil {
		v.o.Logger.Warn("run the test command on the base commit", logattr.Err, err)
		return
	}
	v.baseline, v.baseRun = &t, &r
	if c := v.o.Baselines; c != nil {
		c.SaveBaseline(ctx, key, t, r)
	}
}

// Verify runs the test command on the change and proves its tests.
func (v *verifier) Verify(ctx context.Context, diff string) (tools.Verdict, error) {
	cmd := v.o.Settings.Test
	test, run, err := v.run(ctx, diff, cmd)
	if err != nil {
		return tools.Verdict{}, err
	}
	verdict := tools.Verdict{Test: &test, Baseline: v.baseline}
	cmp := proof.Compare(v.baseRun, run)
	verdict.Comparison = &cmp
	files, err := proof.SplitDiff(diff)
	if err != nil {
		verdict.NoProof = "the change's diff could not be read: " + err.Error()
		return verdict, nil
	}
	change, err := v.contents(ctx, diff, files)
	if err != nil {
		return tools.Verdict{}, err
	}
	if verdict.Flags, err = proof.Guard(change); err != nil {
		v.o.Logger.Warn("the integrity guard", logattr.Err, err)
	}
	verdict.Proof, verdict.NoProof = v.prove(ctx, change, files, cmd, run)
	return verdict, nil
}

// prove runs the change's test files on the base commit's code (they must
// fail there) and, with the same command, on the change (they must pass).
func (v *verifier) prove(ctx context.Context, change proof.Change, files []proof.FilePatch, cmd string, full proof.Run) (*proof.Proof, string) {
	tests, err := proof.ChangedTests(change)
	if err != nil {
		return nil, "the change's tests could not be read: " + err.Error()
	}
	var testFiles []string
	var testPatch strings.Builder
	for _, f := range files {
		if f.NewPath != "" && proof.Classify(f.NewPath, []byte(change.After[f.NewPath])) != proof.CodeFile {
			testFiles = append(testFiles, f.NewPath)
			testPatch.WriteString(f.Text)
		}
	}
	if len(testFiles) == 0 {
		return nil, "the change adds or edits no test"
	}
	narrow, err := proof.RunOnly(cmd, testFiles, tests)
	if err != nil {
		narrow = cmd // the whole command, on both sides
	}
	_, base, err := v.run(ctx, testPatch.String(), narrow)
	if err != nil {
		return nil, "the change's tests could not run on the base commit: " + err.Error()
	}
	onChange := full
	if narrow != cmd {
		if _, onChange, err = v.run(ctx, change.Diff, narrow); err != nil {
			return nil, "the change's tests could not run again: " + err.Error()
		}
	}
	p := proof.Prove(proof.ProofInput{Tests: tests, Files: testFiles, Base: base, Change: onChange})
	return &p, ""
}

// contents reads the files the diff touches before (the base commit) and
// after (a checkout of the change) it, for the integrity guard.
func (v *verifier) contents(ctx context.Context, diff string, files []proof.FilePatch) (proof.Change, error) {
	olds, news := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		if f.OldPath != "" {
			olds[f.OldPath] = true
		}
		if f.NewPath != "" {
			news[f.NewPath] = true
		}
	}
	const max = 1 << 20
	before, err := v.wt.Files(ctx, v.wt.Base(), func(p string) bool { return olds[p] }, max)
	if err != nil {
		return proof.Change{}, err
	}
	c := proof.Change{Diff: diff, Before: bytesMap(before), After: map[string][]byte{}, TestCommand: v.o.Settings.Test}
	tree, done, err := v.checkout(ctx, diff)
	if err != nil {
		return proof.Change{}, err
	}
	defer done()
	root, err := os.OpenRoot(tree.Dir())
	if err != nil {
		return proof.Change{}, err
	}
	defer root.Close()
	for p := range news {
		if b, err := root.ReadFile(p); err == nil && len(b) <= max {
			c.After[p] = b
		}
	}
	return c, nil
}

// run runs command in a fresh sandbox over a fresh checkout of the base
// commit with patch applied, without network, and reads its results.
func (v *verifier) run(ctx context.Context, patch, command string) (tools.TestResult, proof.Run, error) {
	tree, done, err := v.checkout(ctx, patch)
	if err != nil {
		return tools.TestResult{}, proof.Run{}, err
	}
	defer done()
	committed := reports(tree.Dir(), nil)
	so := v.o.sandboxOptions(tree.Dir(), tree.CacheDir(), false)
	sb, err := v.o.Sandbox(so)
	if err != nil {
		return tools.TestResult{}, proof.Run{}, fmt.Errorf("sandbox: %w", err)
	}
	if c, ok := sb.(interface{ Close() error }); ok {
		defer c.Close()
	}
	res, err := sb.Run(ctx, workspace.Command{Script: command, Timeout: v.timeout})
	if err != nil {
		return tools.TestResult{}, proof.Run{}, fmt.Errorf("test command: %w", err)
	}
	t := tools.TestResult{Command: command, ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: res.Output}
	r := proof.Parse(proof.Input{Command: command, ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: res.Output,
		Dir: workspace.WorkspaceDir, Reports: reports(tree.Dir(), committed)})
	return t, r, nil
}

// checkout makes a fresh checkout of the base commit with patch applied,
// and its cache from the copy setup left; done removes it.
func (v *verifier) checkout(ctx context.Context, patch string) (*workspace.WorkTree, func(), error) {
	v.mu.Lock()
	v.n++
	dir := filepath.Join(v.scratch, "tree-"+strconv.Itoa(v.n))
	v.mu.Unlock()
	tree, err := workspace.NewWorkTreeFromBare(ctx, v.wt.GitDir(), v.wt.Base(), workspace.WorkTreeOptions{Dir: dir, Logger: v.o.Logger})
	if err != nil {
		return nil, nil, fmt.Errorf("fresh checkout: %w", err)
	}
	done := func() {
		if err := tree.Remove(); err != nil {
			v.o.Logger.Warn("remove a fresh checkout", logattr.Err, err)
		}
	}
	if err := workspace.ApplyPatch(ctx, tree, patch); err != nil {
		done()
		return nil, nil, fmt.Errorf("apply the change to a fresh checkout: %w", err)
	}
	if err := os.Remove(tree.CacheDir()); err != nil {
		done()
		return nil, nil, err
	}
	if err := copytree.Copy(ctx, v.caches, tree.CacheDir()); err != nil {
		done()
		return nil, nil, fmt.Errorf("copy the caches setup left: %w", err)
	}
	return tree, done, nil
}

// reports reads the JUnit XML reports under dir (proof.IsReport) that are
// not in skip with the same content: those the run wrote, not reports a
// repository committed.
func reports(dir string, skip map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !proof.IsReport(filepath.ToSlash(rel)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 16<<20 {
			return nil
		}
		if old, ok := skip[rel]; !ok || string(old) != string(b) {
			out[filepath.ToSlash(rel)] = b
		}
		return nil
	})
	return out
}

func bytesMap(m map[string]string) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}
