package hostres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// ownership is what a resource remembers of its claims on its host's
// paths (remote.Claim), in its privateRecord: the claim, and for each path
// whether the host saved a file found there before kha. It holds no
// content: the saved files stay on the host.
type ownership struct {
	ID    string          `json:"id"`
	Saved map[string]bool `json:"saved,omitempty"`
	// Created are the files kha made for its blocks (remote.Block's
	// Created): removing the last block removes the file.
	Created map[string]bool `json:"created,omitempty"`
	// Imported: the next apply adopts the path and saves what it finds
	// there (the file as it was before kha first wrote it).
	Imported bool `json:"imported,omitempty"`
}

// newOwnership is a claim of a new resource (or of one from before claims).
func newOwnership(imported bool) ownership {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return ownership{ID: hex.EncodeToString(b), Imported: imported}
}

// savedKnown says whether the host saved a file found at path, and
// whether that is known: a resource from before claims kept no record, so
// what it finds is its own.
func (c ownership) savedKnown(path string, hasPrior bool) (saved, known bool) {
	if c.ID == "" {
		return false, hasPrior
	}
	saved, known = c.Saved[path]
	return saved, known
}

// note says who a claim is for another resource that finds the path
// taken: the resource type, the directory Terraform runs in (its
// configuration's), the machine and the time.
func (r *Resource[M, P]) note() string {
	dir, _ := os.Getwd()
	host, _ := os.Hostname()
	return fmt.Sprintf("kha_%s applied from %s on %s at %s", r.Name, dir, host, time.Now().UTC().Format(time.RFC3339))
}

// onDestroyOf is on_destroy as planned: the configuration's, else the
// prior state's, else restore.
func onDestroyOf(config, prior types.String) types.String {
	switch {
	case !config.IsNull():
		return config
	case known(prior) && !prior.IsNull():
		return prior
	}
	return types.StringValue(OnDestroyRestore)
}

// onDestroyFor is on_destroy of a model: keep for a DestroyLeaver, else
// onDestroyOf.
func onDestroyFor(model any, config, prior types.String) types.String {
	if _, ok := model.(DestroyLeaver); ok {
		return types.StringValue(OnDestroyKeep)
	}
	return onDestroyOf(config, prior)
}

// keeps says whether destroy leaves the host as it is.
func (h *Common) keeps() bool {
	return h.KeepOnDestroy.ValueBool() || h.OnDestroy.ValueString() == OnDestroyKeep
}

// onRemoveOf is what removing a file of h does: put back what kha
// found there with on_destroy = "restore", else delete it. A file left
// by on_destroy = "keep" is never removed; only its record is
// (dropRecords).
func onRemoveOf(h *Common) remote.OnRemove {
	if h.OnDestroy.ValueString() == OnDestroyRestore {
		return remote.OnRemoveRestore
	}
	return remote.OnRemoveDelete
}

// itemKey is an item's key in destroy_actions: its path, and a block's
// marker after "#".
func itemKey(it remote.Item) string {
	path, marker := it.Place()
	if marker != "" {
		return path + "#" + marker
	}
	return path
}

// DestroyActions is destroy_actions for items: unknown while whether
// the host saved a file is not known (saved), unless complete, when such
// a file counts as kha's own.
func DestroyActions(items []remote.Item, h *Common, saved func(path string) (bool, bool), complete bool) types.Map {
	actions := map[string]string{}
	for _, it := range items {
		action := OnDestroyKeep
		if !h.keeps() {
			switch f := it.(type) {
			case remote.File:
				action = OnDestroyDelete
				if h.OnDestroy.ValueString() == OnDestroyRestore {
					wasSaved, known := saved(f.Path)
					if !known && !complete {
						return types.MapUnknown(types.StringType)
					}
					if wasSaved {
						action = OnDestroyRestore
					}
				}
			case remote.Block:
				action = actionRemoveBlock
			default: // an edit of a file kha does not own
				action = actionUndoEdit
			}
		}
		actions[itemKey(it)] = action
	}
	m, _ := types.MapValueFrom(context.Background(), types.StringType, actions) // a map of strings always converts
	return m
}

// owned is items with the ownership claim on each whole file: what put needs to
// claim the path (capture: save a file found where no record is), and
// what remove needs to put back what was there (h's on_destroy and
// destroy_actions). Without a claim (a resource from before claims, on
// destroy) the files go as they are.
func (r *Resource[M, P]) owned(items []remote.Item, c ownership, h *Common, capture bool) []remote.Item {
	if c.ID == "" {
		return items
	}
	var actions map[string]string
	if known(h.DestroyActions) {
		_ = h.DestroyActions.ElementsAs(context.Background(), &actions, false) // strings into strings
	}
	out := make([]remote.Item, len(items))
	note := r.note()
	for i, it := range items {
		if b, ok := it.(remote.Block); ok {
			b.Created = c.Created[b.Path]
			out[i] = b
			continue
		}
		f, ok := it.(remote.File)
		if !ok {
			out[i] = it
			continue
		}
		_, recorded := c.Saved[f.Path] // a put of the path succeeded
		f.Claim = &remote.Claim{ID: c.ID, Note: note, Adopt: h.Adopt.ValueBool() || c.Imported, Capture: capture,
			OnRemove: onRemoveOf(h), Saved: actions[f.Path] == OnDestroyRestore || c.Saved[f.Path], Recorded: recorded}
		out[i] = f
	}
	return out
}

// record notes which files the host saved, and which it made for blocks,
// from the outcomes of the puts (those that succeeded, in order). Once
// saved, a file stays saved: a record lost on the host must not turn a
// restore into a delete.
func (c *ownership) record(files []remote.Item, outcomes []remote.Outcome) {
	for i, o := range outcomes {
		if b, ok := files[i].(remote.Block); ok && o.Created {
			if c.Created == nil {
				c.Created = map[string]bool{}
			}
			c.Created[b.Path] = true
		}
		if f, ok := files[i].(remote.File); ok {
			if c.Saved == nil {
				c.Saved = map[string]bool{}
			}
			c.Saved[f.Path] = c.Saved[f.Path] || o.Saved
		}
	}
}

// settle fills destroy_actions where the plan could not know them, from
// what the host saved of files: after an apply, which knows.
func (c ownership) settle(h *Common, files []remote.Item) {
	if h.DestroyActions.IsUnknown() {
		h.DestroyActions = DestroyActions(files, h, func(p string) (bool, bool) { return c.savedKnown(p, true) }, true)
	}
}
