package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// A block is a marked part of a file that kha manages while leaving the
// rest of the file alone, e.g. entries in /etc/hosts:
//
//	# BEGIN kha <marker>
//	...
//	# END kha <marker>

// BlockLines returns the block as it stands in the file, markers included.
func BlockLines(marker, content string) string {
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return "# BEGIN kha " + marker + "\n" + content + "# END kha " + marker + "\n"
}

func checkMarker(marker string) error {
	if marker == "" || strings.ContainsAny(marker, "\x00\n\r\t'\"\\/") || len(marker) > 100 {
		return fmt.Errorf("block marker %q must be 1-100 characters without quotes, slashes, tabs or newlines", marker)
	}
	return nil
}

// blockScript rewrites $1 with the block between its markers replaced by
// stdin (or removed when $3 is "remove"), keeping the rest, the mode and
// the owner. It renames a copy into place; where the file is a mount point
// (a container's /etc/hosts), rename fails and it writes in place instead.
const blockScript = `set -u
target=$1 marker=$2 action=$3 tmp=$4
begin="# BEGIN kha $marker" end="# END kha $marker"
if [ ! -e "$target" ]; then
  [ "$action" = apply ] || exit 0
  : > "$target" || exit 11
fi
new=$(mktemp) || exit 11
trap 'rm -f -- "$new" "$tmp"' EXIT
awk -v b="$begin" -v e="$end" '$0 == b {skip=1; next} $0 == e {skip=0; next} !skip {print}' "$target" > "$new" || exit 11
if [ "$action" = apply ]; then cat >> "$new" || exit 11; fi
cp -p -- "$target" "$tmp" && cat "$new" > "$tmp" || exit 11
mv -f -- "$tmp" "$target" 2>/dev/null || cat "$new" > "$target" || exit 14
`

// blockStatScript prints the SHA-256 of the block in $1, or "missing".
const blockStatScript = `begin="# BEGIN kha $2" end="# END kha $2"
[ -f "$1" ] || { echo missing; exit 0; }
block=$(awk -v b="$begin" -v e="$end" '$0 == b {on=1} on {print} $0 == e {on=0}' "$1") || exit 1
[ -n "$block" ] || { echo missing; exit 0; }
sum=$(printf '%s\n' "$block" | sha256sum) && echo "${sum%% *}"
`

// BlockDigest is what ReadBlock reports for a block holding content.
func BlockDigest(marker, content string) string {
	sum := sha256.Sum256([]byte(BlockLines(marker, content)))
	return hex.EncodeToString(sum[:])
}

// ApplyBlock puts content between the markers in path, replacing an
// earlier block and leaving every other line as it was.
func (c *Client) ApplyBlock(ctx context.Context, path, marker, content string) (string, error) {
	host := c.cfg.Address()
	if err := errors.Join(checkPath(path), checkMarker(marker)); err != nil {
		return "", &StepError{Host: host, Step: "configure", Path: path, Err: err}
	}
	tmp := path + ".kha-" + randomSuffix()
	_, errOut, exit, err := c.script(ctx, blockScript, []byte(BlockLines(marker, content)), path, marker, "apply", tmp)
	if err == nil && exit != 0 {
		err = fmt.Errorf("exit status %d; the file is untouched", exit)
	}
	if err != nil {
		return "", &StepError{Host: host, Step: "write block", Path: path, Output: trimOutput(errOut), Err: err}
	}
	return c.ReadBlock(ctx, path, marker)
}

// ReadBlock returns the digest of the marked block, or "" when the file
// or the block is missing.
func (c *Client) ReadBlock(ctx context.Context, path, marker string) (string, error) {
	host := c.cfg.Address()
	if err := errors.Join(checkPath(path), checkMarker(marker)); err != nil {
		return "", &StepError{Host: host, Step: "read block", Path: path, Err: err}
	}
	out, errOut, exit, err := c.script(ctx, blockStatScript, nil, path, marker)
	if err == nil && exit != 0 {
		err = fmt.Errorf("exit status %d", exit)
	}
	if err != nil {
		return "", &StepError{Host: host, Step: "read block", Path: path, Output: trimOutput(errOut), Err: err}
	}
	if line := string(bytes.TrimSpace(out)); line != "missing" {
		return line, nil
	}
	return "", nil
}

// RemoveBlock deletes the marked block and keeps the rest of the file.
func (c *Client) RemoveBlock(ctx context.Context, path, marker string) error {
	host := c.cfg.Address()
	if err := errors.Join(checkPath(path), checkMarker(marker)); err != nil {
		return &StepError{Host: host, Step: "remove block", Path: path, Err: err}
	}
	_, errOut, exit, err := c.script(ctx, blockScript, []byte{}, path, marker, "remove", path+".kha-"+randomSuffix())
	if err == nil && exit != 0 {
		err = fmt.Errorf("exit status %d", exit)
	}
	if err != nil {
		return &StepError{Host: host, Step: "remove block", Path: path, Output: trimOutput(errOut), Err: err}
	}
	return nil
}
