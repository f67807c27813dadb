package testhost

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// Change is a path under one of Options.Overlays that differs, as the
// server's sessions see it, from this machine's.
type Change struct {
	Path string // as the sessions see it, e.g. /etc/haproxy/haproxy.cfg
	Kind ChangeKind
}

func (c Change) String() string { return fmt.Sprintf("%s %s", c.Kind, c.Path) }

// ChangeKind says how a path differs.
type ChangeKind string

const (
	Added        ChangeKind = "added"               // a file the machine does not have
	AddedDir     ChangeKind = "added directory"     // a directory the machine does not have
	Modified     ChangeKind = "modified"            // other content, mode or type than the machine's
	Removed      ChangeKind = "removed"             // the machine has it, the sessions no longer see it
	ModifiedSame ChangeKind = "rewritten as it was" // written again with the machine's content and mode
)

func (s *Server) overlayLayer(i int) string {
	return filepath.Join(s.Dir, fmt.Sprintf("overlay-%d", i))
}

// OverlayChanges lists what the server's sessions changed under its
// Overlays, sorted by path. A file written back with the content and mode
// the machine has is ModifiedSame, not Modified.
func (s *Server) OverlayChanges() ([]Change, error) {
	var changes []Change
	for i, dir := range s.overlays {
		upper := filepath.Join(s.overlayLayer(i), "upper")
		err := filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == upper {
				return err
			}
			rel, err := filepath.Rel(upper, p)
			if err != nil {
				return err
			}
			path := filepath.Join(dir, rel)
			info, err := d.Info()
			if err != nil {
				return err
			}
			lower, lowerErr := os.Lstat(path)
			switch {
			case isWhiteout(info):
				changes = append(changes, Change{path, Removed})
			case lowerErr != nil && d.IsDir():
				changes = append(changes, Change{path, AddedDir})
			case lowerErr != nil:
				changes = append(changes, Change{path, Added})
			case d.IsDir():
				if !lower.IsDir() {
					changes = append(changes, Change{path, Modified})
				}
			default:
				kind, err := compareFiles(p, info, path, lower)
				if err != nil {
					return err
				}
				changes = append(changes, Change{path, kind})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, nil
}

// isWhiteout: overlayfs marks a deleted lower file with a 0/0 character
// device in the upper layer.
func isWhiteout(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && info.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0
}

func compareFiles(upperPath string, upper fs.FileInfo, lowerPath string, lower fs.FileInfo) (ChangeKind, error) {
	if upper.Mode() != lower.Mode() {
		return Modified, nil
	}
	read := os.ReadFile
	if upper.Mode()&fs.ModeSymlink != 0 {
		read = func(p string) ([]byte, error) {
			target, err := os.Readlink(p)
			return []byte(target), err
		}
	}
	a, err := read(upperPath)
	if err != nil {
		return "", err
	}
	b, err := read(lowerPath)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(a, b) {
		return Modified, nil
	}
	return ModifiedSame, nil
}
