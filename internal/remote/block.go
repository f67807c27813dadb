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

func (c *Client) checkBlock(step string, f File) error {
	if err := errors.Join(checkPath(f.Path), CheckMarker(f.Block)); err != nil {
		return &StepError{Host: c.cfg.Address(), Step: step, Path: f.Path, Err: err}
	}
	return nil
}

// putBlock puts f's content between its markers, where the block was or
// at the end of the file, leaving every other line as it was.
func (c *Client) putBlock(ctx context.Context, f File) error {
	return c.changeBlock(ctx, f, true, []byte(BlockLines(f.Block, string(f.Content))))
}

// removeBlock deletes the marked block and keeps the rest of the file.
func (c *Client) removeBlock(ctx context.Context, f File) error {
	return c.changeBlock(ctx, f, false, []byte{})
}

func (c *Client) changeBlock(ctx context.Context, f File, apply bool, block []byte) error {
	step := map[bool]string{true: "write block", false: "remove block"}[apply]
	if err := c.checkBlock(step, f); err != nil {
		return err
	}
	defer c.lockDir(path.Dir(f.Path))()
	c.log(ctx, LevelDebug, step, map[string]any{"path": f.Path, "marker": f.Block})
	args := blockArgs{Target: f.Path, Marker: f.Block, Apply: apply, Limit: commandLimit(ctx), Rand: randomSuffix()}
	_, errOut, exit, err := c.script(ctx, blockScript.with(args), block)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(errOut), exit)
	}
	if err != nil {
		c.log(ctx, LevelWarn, step+" failed", map[string]any{"path": f.Path, "error": err.Error()})
		return &StepError{Host: c.cfg.Address(), Step: step, Path: f.Path, Output: trimOutput(errOut), Err: err}
	}
	return nil
}

// readBlock reports the digest of the marked block; a missing file or
// block is not an error, a damaged one is.
func (c *Client) readBlock(ctx context.Context, f File) (Observed, error) {
	if err := c.checkBlock("read block", f); err != nil {
		return Observed{}, err
	}
	out, errOut, exit, err := c.script(ctx, blockReadScript.with(blockReadArgs{Target: f.Path, Marker: f.Block}), nil)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(errOut), exit)
	}
	if err != nil {
		return Observed{}, &StepError{Host: c.cfg.Address(), Step: "read block", Path: f.Path, Output: trimOutput(errOut), Err: err}
	}
	if len(out) == 0 {
		return Observed{}, nil
	}
	return Observed{Exists: true, SHA256: SHA256(out)}, nil
}
