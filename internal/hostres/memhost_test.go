package hostres

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// memHost is a host in memory that answers the lifecycle as a real one
// answers through remote.Client, for what the lifecycle decides on (the
// scripts in internal/remote/scripts say how): whole files with their
// mode and owner, replaced only once validated and put back when the
// reload fails; kha's record of each claimed path, with the file found
// there before kha; edits that start from what the host last read; and
// the failures a test chooses. It verifies nothing and runs no preflight:
// the lab model asks for neither.
type memHost struct {
	// Host answers what the lab model never asks (a handover's record,
	// and what only the provider's hooks ask: ServiceState, SeeVIP,
	// DialTCP): nil, so a call fails the test loudly.
	Host
	address string
	key     ssh.PublicKey
	files   map[string]memFile
	// records are kha's records of claimed paths (".<name>.kha"), by path.
	records map[string]memRecord
	reads   map[string][]byte // since RememberReads
	ran     []string          // the commands run, in order

	// down: the host does not answer (see fleet.dial).
	down bool
	// commands say how the commands a test names end (an error: a non-zero
	// exit); the others succeed.
	commands map[string]func() error
	// unwritable are the paths whose rename into place fails.
	unwritable map[string]bool
}

// exits1 is a command that fails.
func exits1() error { return errors.New("exit status 1") }

// memFile is a whole file: its content, permission bits, owner and group.
type memFile struct {
	content      string
	mode         uint32
	owner, group string
}

// memRecord is kha's record of a path: the claim that holds it, and the
// file that was there before kha first wrote it (nil: none).
type memRecord struct {
	claim, note string
	original    *memFile
}

func newMemHost(t *testing.T, address string) *memHost {
	t.Helper()
	public, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(public)
	if err != nil {
		t.Fatal(err)
	}
	return &memHost{address: address, key: key, files: map[string]memFile{}, records: map[string]memRecord{},
		commands: map[string]func() error{}, unwritable: map[string]bool{}}
}

func (h *memHost) Address() string        { return h.address }
func (h *memHost) HostKey() ssh.PublicKey { return h.key }
func (h *memHost) RememberReads()         { h.reads = map[string][]byte{} }

// fail is the engine's error of a step that failed on the host.
func (h *memHost) fail(step remote.Step, path string, err error) error {
	return &remote.StepError{Host: h.address, Step: step, Path: path, Err: err}
}

// run runs a command, as the test says it ends.
func (h *memHost) run(command string) error {
	h.ran = append(h.ran, command)
	if end := h.commands[command]; end != nil {
		if err := end(); err != nil {
			return fmt.Errorf("%q: %w", command, err)
		}
	}
	return nil
}

func (h *memHost) ReadFile(_ context.Context, path string) ([]byte, error) {
	f, ok := h.files[path]
	if !ok {
		return nil, h.fail(remote.StepRead, path, fs.ErrNotExist)
	}
	if h.reads != nil {
		h.reads[path] = []byte(f.content)
	}
	return []byte(f.content), nil
}

func (h *memHost) Put(ctx context.Context, it remote.Item) (remote.Outcome, error) {
	if f, ok := it.(remote.File); ok {
		return h.putFile(f)
	}
	if e, ok := editOf(it); ok {
		return h.edit(ctx, e, e.Edit.Apply)
	}
	return remote.Outcome{}, fmt.Errorf("memHost does not keep %T", it)
}

// editOf is the edit an item is, as a model renders it or as the
// lifecycle rolls it back.
func editOf(it remote.Item) (remote.EditedFile, bool) {
	switch e := it.(type) {
	case remote.EditedFile:
		return e, true
	case *remote.EditedFile:
		return *e, true
	}
	return remote.EditedFile{}, false
}

// putFile is applyScript: refuse another owner's path, leave a file the
// host has already, validate, record the claim (saving the file found
// with capture), rename into place and reload, putting the previous file
// and record back when that fails.
func (h *memHost) putFile(f remote.File) (remote.Outcome, error) {
	rec, recorded := h.records[f.Path]
	if f.Claim != nil && recorded && rec.claim != f.Claim.ID && !f.Claim.Adopt {
		return remote.Outcome{}, h.fail("claim", f.Path, errors.New("managed by another kha resource: "+rec.note))
	}
	mode := f.Mode
	if mode == 0 {
		mode = 0o644
	}
	want := memFile{content: string(f.Content), mode: mode, owner: cmp.Or(f.Owner, "root"), group: cmp.Or(f.Group, "root")}
	old, exists := h.files[f.Path]
	saved := recorded && rec.original != nil
	if f.Claim != nil && !recorded && f.Claim.Capture && exists {
		saved = true
	}
	if exists && old == want {
		h.claim(f, saved, old)
		return remote.Outcome{Unchanged: true, Saved: saved}, nil
	}
	if f.ValidateCommand != "" {
		if err := h.run(f.ValidateCommand); err != nil {
			return remote.Outcome{}, h.fail("validate", f.Path, fmt.Errorf("%w; the previous file is untouched", err))
		}
	}
	h.claim(f, saved, old)
	if err := h.replace(f.Path, want, f.ReloadCommand); err != nil {
		h.records[f.Path] = rec
		if !recorded {
			delete(h.records, f.Path)
		}
		return remote.Outcome{}, err
	}
	return remote.Outcome{Saved: saved}, nil
}

// claim records f's claim on its path, unless the record has it: a new
// record keeps the file found there when saved; adopting keeps the saved
// file of the record taken over.
func (h *memHost) claim(f remote.File, saved bool, found memFile) {
	rec, recorded := h.records[f.Path]
	if f.Claim == nil || recorded && rec.claim == f.Claim.ID {
		return
	}
	if !recorded && saved {
		rec.original = &found
	}
	rec.claim, rec.note = f.Claim.ID, f.Claim.Note
	h.records[f.Path] = rec
}

// replace renames want into place at path and runs reload; when that
// fails, the previous file (or none) is back and reload runs again.
func (h *memHost) replace(path string, want memFile, reload string) error {
	if h.unwritable[path] {
		return h.fail("rename into place", path, errors.New("read-only file system; the previous file is untouched"))
	}
	old, existed := h.files[path]
	h.files[path] = want
	if reload == "" {
		return nil
	}
	err := h.run(reload)
	if err == nil {
		return nil
	}
	delete(h.files, path)
	if existed {
		h.files[path] = old
	}
	_ = h.run(reload)
	return h.fail(remote.StepReload, path, fmt.Errorf("%w; the previous file was restored and the reload command run again", err))
}

// edit changes a file kha does not own, from what the host last read of
// it (RememberReads) or reads now, keeping its mode and owner. (The
// engine refuses a file changed since it was read; nothing changes a
// memHost's files while the lifecycle runs.)
func (h *memHost) edit(ctx context.Context, f remote.EditedFile, change func([]byte) ([]byte, error)) (remote.Outcome, error) {
	current, ok := h.reads[f.Path]
	if !ok {
		var err error
		if current, err = h.ReadFile(ctx, f.Path); err != nil {
			return remote.Outcome{}, err
		}
	}
	delete(h.reads, f.Path)
	changed, err := change(current)
	if err != nil {
		return remote.Outcome{}, err
	}
	if bytes.Equal(changed, current) {
		return remote.Outcome{Unchanged: true}, nil
	}
	edited := h.files[f.Path]
	edited.content = string(changed)
	return remote.Outcome{}, h.replace(f.Path, edited, f.ReloadCommand)
}

// Remove is removeScript for a file: a file whose record is gone where
// the owner says it has one stays, as does another owner's; keep drops
// the record alone; restore puts the saved file back, else the file goes;
// command runs after a change. An edit is taken back.
func (h *memHost) Remove(ctx context.Context, it remote.Item, command string) error {
	if e, ok := editOf(it); ok {
		_, err := h.edit(ctx, e, e.Edit.Undo)
		return err
	}
	f, ok := it.(remote.File)
	if !ok {
		return fmt.Errorf("memHost does not keep %T", it)
	}
	c := f.Claim
	if c == nil {
		c = &remote.Claim{}
	}
	rec, recorded := h.records[f.Path]
	_, exists := h.files[f.Path]
	switch {
	case c.Recorded && c.OnRemove != remote.OnRemoveKeep && exists && !recorded:
		return h.fail(remote.StepRemove, f.Path, remote.ErrUnvouched)
	case c.ID != "" && recorded && rec.claim != c.ID:
		return h.fail(remote.StepRemove, f.Path, remote.ErrClaimedElsewhere)
	case c.OnRemove == remote.OnRemoveKeep:
		delete(h.records, f.Path)
		return nil
	}
	changed := exists
	if c.OnRemove == remote.OnRemoveRestore && (rec.original != nil || c.Saved) {
		if rec.original == nil {
			return h.fail("put back the file that was there before kha", f.Path, errors.New("the saved copy is gone; nothing was removed"))
		}
		h.files[f.Path], changed = *rec.original, true
	} else {
		delete(h.files, f.Path)
	}
	if c.ID != "" {
		delete(h.records, f.Path)
	}
	if changed && command != "" {
		if err := h.run(command); err != nil {
			return h.fail("run the command after removing", f.Path, err)
		}
	}
	return nil
}

// Observe is statScript: for each whole file, whether it is there and its
// digest, mode and owner (by name: the lab's files name none).
func (h *memHost) Observe(_ context.Context, items []remote.Item) ([]remote.Observed, error) {
	seen := make([]remote.Observed, len(items))
	for i, it := range items {
		f, ok := it.(remote.File)
		if !ok {
			return nil, fmt.Errorf("memHost does not observe %T", it)
		}
		if have, ok := h.files[f.Path]; ok {
			seen[i] = remote.Observed{Exists: true, SHA256: remote.SHA256([]byte(have.content)), Mode: have.mode,
				Owner: have.owner, Group: have.group}
		}
	}
	return seen, nil
}

// fleet is the hosts of a test, by address, and how the lifecycle
// reaches them (ProviderData's dialer).
type fleet struct {
	hosts map[string]*memHost
	// dialled are the connections the lifecycle asked for, in order.
	dialled []remote.Config
}

// dial is a Dialer: a host that is down, or not in the fleet, does not
// answer, as the pool reports a host given up on.
func (f *fleet) dial(_ context.Context, cfg remote.Config, _ Purpose) (Host, error) {
	f.dialled = append(f.dialled, cfg)
	h := f.hosts[cfg.Address()]
	if h == nil || h.down {
		return nil, &remote.StepError{Host: cfg.Address(), Step: remote.StepConnect,
			Err: &remote.GaveUpError{Attempts: 3, Err: errors.New("connect: connection refused")}}
	}
	return h, nil
}
