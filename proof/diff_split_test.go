package proof

import "testing"

func TestSplitDiff(t *testing.T) {
	t.Parallel()
	diff := "diff --git a/a.go b/a.go\nindex 1..2 100644\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-x\n+y\n" +
		"diff --git a/new_test.go b/new_test.go\nnew file mode 100644\nindex 0000000..3\n--- /dev/null\n+++ b/new_test.go\n@@ -0,0 +1 @@\n+package a\n"
	files, err := SplitDiff(diff)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path() != "a.go" || files[1].OldPath != "" || files[1].Path() != "new_test.go" ||
		files[0].Text+files[1].Text != diff {
		t.Errorf("SplitDiff = %+v", files)
	}
}
