package remote

import (
	"context"
	"errors"
	"fmt"
	"path"
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

// CheckMarker refuses block markers the scripts cannot carry.
func CheckMarker(marker string) error {
	if marker == "" || strings.ContainsAny(marker, "\x00\n\r\t'\"\\/") || len(marker) > 100 {
		return fmt.Errorf("block marker %q must be 1-100 characters without quotes, slashes, tabs or newlines", marker)
	}
	return nil
}

// Block is a marked block kha manages within a file on a host (see
// BlockLines): the rest of the file is left as it is.
type Block struct {
	Path    string
	Marker  string
	Content []byte
	// SHA256, when set, is the digest of a block whose content is not at
	// hand (one found on the host at import): what Digest reports.
	SHA256 string
	// Created says that kha made the file for the block (Outcome.Created
	// of its first put): removing the block removes the file when
	// nothing else is left in it, as it was before kha.
	Created bool
}

// Place is the block's file and marker.
func (b Block) Place() (path, marker string) { return b.Path, b.Marker }

// Reload is empty: nothing reloads after a block.
func (b Block) Reload() string { return "" }

// Digest is the digest of the block as it stands in the file, markers
// included.
func (b Block) Digest() string {
	if b.SHA256 != "" {
		return b.SHA256
	}
	return SHA256([]byte(BlockLines(b.Marker, string(b.Content))))
}

// Drift says whether the host's block differs from b.
func (b Block) Drift(o Observed) string {
	what := fmt.Sprintf("block %q", b.Marker)
	switch {
	case !o.Exists:
		return missing(b.Path, what)
	case o.SHA256 != b.Digest():
		return fmt.Sprintf("%s: the %s changed", b.Path, what)
	}
	return ""
}

func (c *Client) checkBlock(step Step, b Block) error {
	if err := errors.Join(checkPath(b.Path), CheckMarker(b.Marker)); err != nil {
		return &StepError{Host: c.cfg.Address(), Step: step, Path: b.Path, Err: err}
	}
	return nil
}

// put puts b's content between its markers, where the block was or at
// the end of the file, leaving every other line as it was.
func (b Block) put(ctx context.Context, c *Client) (Outcome, error) {
	return c.changeBlock(ctx, b, true, []byte(BlockLines(b.Marker, string(b.Content))))
}

// remove deletes the marked block and keeps the rest of the file.
func (b Block) remove(ctx context.Context, c *Client, _ string) error {
	_, err := c.changeBlock(ctx, b, false, []byte{})
	return err
}

func (c *Client) changeBlock(ctx context.Context, b Block, apply bool, block []byte) (Outcome, error) {
	step := map[bool]Step{true: "write block", false: "remove block"}[apply]
	if err := c.checkBlock(step, b); err != nil {
		return Outcome{}, err
	}
	defer c.lockDir(path.Dir(b.Path))()
	c.log(ctx, LevelDebug, string(step), map[string]any{"path": b.Path, "marker": b.Marker})
	args := blockArgs{Target: b.Path, Marker: b.Marker, Apply: apply, Limit: commandLimit(ctx), Rand: randomSuffix(), Created: b.Created}
	out, errOut, exit, err := c.script(ctx, blockScript.with(args), block)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(errOut), exit)
	}
	if err != nil {
		c.log(ctx, LevelWarn, string(step)+" failed", map[string]any{"path": b.Path, "error": err.Error()})
		return Outcome{}, &StepError{Host: c.cfg.Address(), Step: step, Path: b.Path, Output: trimOutput(errOut), Err: err}
	}
	return Outcome{Created: string(out) == wordCreated+"\n"}, nil
}

// observe reports the digest of the marked block; a missing file or
// block is not an error, a damaged one is.
func (b Block) observe(ctx context.Context, c *Client) (Observed, error) {
	if err := c.checkBlock("read block", b); err != nil {
		return Observed{}, err
	}
	out, errOut, exit, err := c.script(ctx, blockReadScript.with(blockReadArgs{Target: b.Path, Marker: b.Marker}), nil)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(errOut), exit)
	}
	if err != nil {
		return Observed{}, &StepError{Host: c.cfg.Address(), Step: "read block", Path: b.Path, Output: trimOutput(errOut), Err: err}
	}
	if len(out) == 0 {
		return Observed{Notice: unsafeNotice(b.Path, errOut)}, nil
	}
	return Observed{Exists: true, SHA256: SHA256(out), State: string(out), Notice: unsafeNotice(b.Path, errOut)}, nil
}
