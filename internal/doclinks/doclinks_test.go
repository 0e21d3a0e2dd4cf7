// Package doclinks holds the test that keeps the relative links of the
// repository's Markdown files pointing at files and headings that exist.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/noamgen/noamgen/internal/testmod"
)

// link matches a Markdown inline link or image: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// fence matches a code fence line.
var fence = regexp.MustCompile("^\\s*(```|~~~)")

// heading matches an ATX heading.
var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// TestRelativeLinks reads every Markdown file of the repository (outside
// node_modules and folders starting with "." or "_") and fails on a
// relative link to a file or folder that does not exist, or to a heading
// (#anchor) that the target file does not have. Links to other sites are
// not followed.
func TestRelativeLinks(t *testing.T) {
	root := testmod.Root(t)
	anchors := map[string]map[string]bool{}
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Markdown file found")
	}
	checked := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		inFence := false
		for n, line := range strings.Split(string(src), "\n") {
			if fence.MatchString(line) {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(stripCode(line), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %s: no such file or folder", rel, n+1, target)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if anchors[dest] == nil {
					anchors[dest] = headingAnchors(t, dest)
				}
				if !anchors[dest][anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", rel, n+1, target, filepath.Base(dest), anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the test checks nothing")
	}
}

// stripCode removes inline code spans, whose brackets are not links.
func stripCode(line string) string {
	return regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "")
}

// headingAnchors returns the anchors GitHub gives the headings of the
// Markdown file path: lower case, punctuation other than '-' and '_'
// removed, spaces as '-', and -1, -2, ... for repeats.
func headingAnchors(t *testing.T, path string) map[string]bool {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(string(src), "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
