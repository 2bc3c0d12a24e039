package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/forgedaemon/forged/ane/format/tensor"
	"github.com/forgedaemon/forged/internal/atomicfile"
	"github.com/forgedaemon/forged/internal/strictjson"
)

// ReleaseFile is the bundle's integrity inventory, release.json, at the
// bundle root.
const ReleaseFile = "release.json"

// Components of release.json schema 1 (hf_release.py).
const (
	ComponentDocumentation = "documentation"
	ComponentModel         = "model"
	ComponentCoreAI        = "coreai"
	ComponentCoreML        = "coreml"
	ComponentExport        = "export"
	ComponentDrafter       = "drafter"
)

// ModificationNotice is the exact text release.json carries on files that
// ANEMLL converted or quantized.
const ModificationNotice = "Converted/quantized by ANEMLL; see MODIFICATIONS.md for details."

// RootDocuments is the exact set of documentation files at the bundle root.
var RootDocuments = []string{"LICENSE", "MODIFICATIONS.md", "NOTICE", "QWEN_SOURCE.json", "README.md"}

// ModelFiles are the only file names allowed under the model component.
var ModelFiles = []string{
	"added_tokens.json", "chat_template.jinja", "chat_template.json", "config.json",
	"embed_tokens_fp16.npy", "generation_config.json", "merges.txt", "special_tokens_map.json",
	"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "vocab.json",
}

// RequiredModelFiles must be present in the inventory under the model root.
var RequiredModelFiles = []string{"config.json", "tokenizer.json", "tokenizer_config.json", "embed_tokens_fp16.npy"}

// EmbeddingFile is the FP16 embedding table under the model root.
const EmbeddingFile = tensor.EmbeddingNPY

// The drafter block must name exactly these files.
const (
	DrafterModel     = "dflash2_lut4_gptq.aimodel"
	DrafterMetadata  = "dflash2_lut4_gptq.json"
	DrafterConfig    = "config.json"
	DrafterCodebooks = "selector.safetensors"
)

// textSuffixes are exempt from modification_notice in converted components.
var textSuffixes = []string{".json", ".md", ".txt", ".yaml", ".yml", ".toml", ".xml", ".plist"}

var (
	hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)
	hex40 = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// Release is release.json, schema_version 1.
type Release struct {
	SchemaVersion int                `json:"schema_version"`
	UpstreamModel UpstreamModel      `json:"upstream_model"`
	ModelPath     string             `json:"model_path"`
	Runtimes      map[string]Runtime `json:"runtimes"`
	ExportPath    string             `json:"export_path,omitempty"`
	Drafter       *Drafter           `json:"drafter,omitempty"`
	// HubConfig is kept verbatim: newer cards record the root config.json
	// copy here, and its schema is not published.
	HubConfig json.RawMessage `json:"hub_config,omitempty"`
	Files     []File          `json:"files"`
}

// UpstreamModel names the Hugging Face model the bundle was converted from.
type UpstreamModel struct {
	ID       string `json:"id"`
	Revision string `json:"revision"`
}

// Runtime is one runtime component (coreai or coreml) and its contexts.
type Runtime struct {
	Path     string `json:"path"`
	Contexts []int  `json:"contexts"`
}

// Drafter is the DFlash2 drafter block.
type Drafter struct {
	Path         string `json:"path"`
	Runtime      string `json:"runtime"`
	Model        string `json:"model"`
	Metadata     string `json:"metadata"`
	Config       string `json:"config"`
	Codebooks    string `json:"codebooks"`
	TargetExport string `json:"target_export"`
	HeadExport   string `json:"head_export"`
	Taps         []int  `json:"taps"`
}

// File is one inventoried regular file.
type File struct {
	Path               string `json:"path"`
	Component          string `json:"component"`
	Bytes              int64  `json:"bytes"`
	SHA256             string `json:"sha256"`
	ModificationNotice string `json:"modification_notice,omitempty"`
}

// ParseRelease decodes and validates release.json. Unknown fields and
// duplicate keys are errors: the inventory is the root of trust.
func ParseRelease(data []byte) (*Release, error) {
	var r Release
	if err := strictjson.Decode(data, &r, strictjson.Options{DisallowUnknownFields: true}); err != nil {
		return nil, fmt.Errorf("release.json: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// LoadRelease reads and validates the release.json of the bundle in dir.
func LoadRelease(dir string) (*Release, error) {
	data, err := os.ReadFile(filepath.Join(dir, ReleaseFile))
	if err != nil {
		return nil, err
	}
	return ParseRelease(data)
}

// Marshal returns release.json bytes: files sorted by path, two-space
// indent, trailing newline, so the same inventory always gives the same bytes.
func (r *Release) Marshal() ([]byte, error) {
	c := *r
	c.Files = slices.Clone(r.Files)
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write validates r and writes it atomically as dir/release.json.
func (r *Release) Write(dir string) error {
	if err := r.Validate(); err != nil {
		return err
	}
	data, err := r.Marshal()
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ReleaseFile), data, 0o644)
}

// ReleaseError is one broken rule of release.json.
type ReleaseError struct {
	Rule  string // e.g. "path.canonical"
	Field string // e.g. "files[3].path"
	Msg   string
}

func (e *ReleaseError) Error() string {
	return fmt.Sprintf("release.json: %s: %s (rule %s)", e.Field, e.Msg, e.Rule)
}

func relErr(rule, field, format string, args ...any) error {
	return &ReleaseError{Rule: rule, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks every schema-1 rule and returns all broken ones joined.
func (r *Release) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if r.SchemaVersion != 1 {
		add(relErr("schema.version", "schema_version", "is %d, want 1", r.SchemaVersion))
	}
	if r.UpstreamModel.ID == "" {
		add(relErr("schema.upstream", "upstream_model.id", "is empty"))
	}
	if !hex40.MatchString(r.UpstreamModel.Revision) {
		add(relErr("schema.upstream", "upstream_model.revision", "%q is not a 40-hex lowercase commit", r.UpstreamModel.Revision))
	}

	// Component roots: canonical, distinct, never nested in each other.
	roots := map[string]string{} // component -> root
	addRoot := func(component, field, root string) {
		if err := CheckPath(root); err != nil {
			add(relErr("path.canonical", field, "%v", err))
			return
		}
		roots[component] = root
	}
	addRoot(ComponentModel, "model_path", r.ModelPath)
	if len(r.Runtimes) == 0 {
		add(relErr("schema.runtimes", "runtimes", "no runtime listed"))
	}
	for _, name := range sortedKeys(r.Runtimes) {
		rt := r.Runtimes[name]
		field := "runtimes." + name
		if name != ComponentCoreAI && name != ComponentCoreML {
			add(relErr("schema.runtimes", field, "unknown runtime %q (want coreai or coreml)", name))
			continue
		}
		addRoot(name, field+".path", rt.Path)
		add(checkContexts(field+".contexts", rt.Contexts))
	}
	if r.ExportPath != "" {
		addRoot(ComponentExport, "export_path", r.ExportPath)
	}
	if r.Drafter != nil {
		addRoot(ComponentDrafter, "drafter.path", r.Drafter.Path)
		add(r.Drafter.validate(r.Runtimes))
	}
	add(checkRootsDisjoint(roots))

	// Files.
	seen := map[string]int{}
	docs := map[string]bool{}
	modelNames := map[string]bool{}
	for i, f := range r.Files {
		field := fmt.Sprintf("files[%d]", i)
		if err := CheckPath(f.Path); err != nil {
			add(relErr("path.canonical", field+".path", "%v", err))
			continue
		}
		if j, dup := seen[f.Path]; dup {
			add(relErr("path.duplicate", field+".path", "%q already listed as files[%d]", f.Path, j))
			continue
		}
		seen[f.Path] = i
		if f.Path == ReleaseFile {
			add(relErr("path.component", field+".path", "release.json cannot inventory itself"))
		}
		if f.Bytes < 0 {
			add(relErr("file.bytes", field+".bytes", "is negative (%d)", f.Bytes))
		}
		if !hex64.MatchString(f.SHA256) {
			add(relErr("file.sha256", field+".sha256", "%q is not 64 lowercase hex digits", f.SHA256))
		}
		switch f.Component {
		case ComponentDocumentation:
			if !slices.Contains(RootDocuments, f.Path) {
				add(relErr("documentation.set", field+".path", "%q is not one of the root documents %v", f.Path, RootDocuments))
			}
			docs[f.Path] = true
		case ComponentModel, ComponentCoreAI, ComponentCoreML, ComponentExport, ComponentDrafter:
			root, ok := roots[f.Component]
			if !ok {
				add(relErr("path.component", field+".component", "component %q has no root in release.json", f.Component))
				break
			}
			rel, under := under(root, f.Path)
			if !under {
				add(relErr("path.component", field+".path", "%q is not under the %s root %q", f.Path, f.Component, root))
				break
			}
			if f.Component == ComponentModel {
				if strings.Contains(rel, "/") || !slices.Contains(ModelFiles, rel) {
					add(relErr("model.files", field+".path", "%q is not an allowed model file %v", f.Path, ModelFiles))
				}
				modelNames[rel] = true
			}
		default:
			add(relErr("schema.component", field+".component", "unknown component %q", f.Component))
		}
		if needsNotice(f.Component, f.Path, roots[ComponentModel]) {
			if f.ModificationNotice != ModificationNotice {
				add(relErr("file.modification_notice", field+".modification_notice", "%q needs modification_notice %q", f.Path, ModificationNotice))
			}
		}
	}
	for _, d := range RootDocuments {
		if !docs[d] {
			add(relErr("documentation.set", "files", "root document %q is not inventoried", d))
		}
	}
	for _, m := range RequiredModelFiles {
		if !modelNames[m] {
			add(relErr("model.required", "files", "required model file %q is not inventoried", path.Join(r.ModelPath, m)))
		}
	}
	if r.Drafter != nil && roots[ComponentDrafter] != "" {
		for _, name := range []string{r.Drafter.Metadata, r.Drafter.Config, r.Drafter.Codebooks} {
			if _, ok := seen[path.Join(r.Drafter.Path, name)]; !ok {
				add(relErr("drafter.files", "drafter", "%q is not inventoried", path.Join(r.Drafter.Path, name)))
			}
		}
		if len(r.FilesUnder(path.Join(r.Drafter.Path, r.Drafter.Model))) == 0 {
			add(relErr("drafter.files", "drafter.model", "no inventoried file under %q", path.Join(r.Drafter.Path, r.Drafter.Model)))
		}
	}
	return errors.Join(errs...)
}

func (d *Drafter) validate(runtimes map[string]Runtime) error {
	var errs []error
	exact := func(field, got, want string) {
		if got != want {
			errs = append(errs, relErr("drafter.names", "drafter."+field, "is %q, must be %q", got, want))
		}
	}
	exact("model", d.Model, DrafterModel)
	exact("metadata", d.Metadata, DrafterMetadata)
	exact("config", d.Config, DrafterConfig)
	exact("codebooks", d.Codebooks, DrafterCodebooks)
	if _, ok := runtimes[d.Runtime]; !ok {
		errs = append(errs, relErr("drafter.runtime", "drafter.runtime", "%q is not a runtime of this release", d.Runtime))
	}
	for _, f := range []struct{ name, v string }{{"target_export", d.TargetExport}, {"head_export", d.HeadExport}} {
		if err := CheckPath(f.v); err != nil || strings.Contains(f.v, "/") {
			errs = append(errs, relErr("drafter.export", "drafter."+f.name, "%q must be a single path component", f.v))
		}
	}
	if len(d.Taps) == 0 {
		errs = append(errs, relErr("drafter.taps", "drafter.taps", "is empty"))
	}
	for i, t := range d.Taps {
		// The published checker bounds taps by the real model's 64 layers;
		// verify checks them against the bundle's own layer count.
		if t < 0 || t >= 64 {
			errs = append(errs, relErr("drafter.taps", fmt.Sprintf("drafter.taps[%d]", i), "%d is outside [0, 64)", t))
		}
	}
	return errors.Join(errs...)
}

func checkContexts(field string, ctxs []int) error {
	if len(ctxs) == 0 {
		return relErr("runtime.contexts", field, "is empty")
	}
	for i, c := range ctxs {
		if c <= 0 || c%1024 != 0 {
			return relErr("runtime.contexts", fmt.Sprintf("%s[%d]", field, i), "%d is not a positive multiple of 1024", c)
		}
		if i > 0 && c <= ctxs[i-1] {
			return relErr("runtime.contexts", field, "must be strictly ascending")
		}
	}
	return nil
}

func checkRootsDisjoint(roots map[string]string) error {
	names := sortedKeys(roots)
	for i, a := range names {
		for _, b := range names[i+1:] {
			ra, rb := roots[a], roots[b]
			if ra == rb {
				return relErr("path.roots", a, "root %q is also the root of %s", ra, b)
			}
			if _, in := under(ra, rb); in {
				return relErr("path.roots", b, "root %q lies inside the %s root %q", rb, a, ra)
			}
			if _, in := under(rb, ra); in {
				return relErr("path.roots", a, "root %q lies inside the %s root %q", ra, b, rb)
			}
		}
	}
	return nil
}

// needsNotice reports whether a file must carry modification_notice: the
// embedding table, and every non-text file of a converted component
// except LICENSE and NOTICE.
func needsNotice(component, p, modelRoot string) bool {
	switch component {
	case ComponentModel:
		return p == path.Join(modelRoot, EmbeddingFile)
	case ComponentCoreAI, ComponentCoreML, ComponentExport, ComponentDrafter:
		base := path.Base(p)
		if base == "LICENSE" || base == "NOTICE" {
			return false
		}
		return !slices.Contains(textSuffixes, strings.ToLower(path.Ext(base)))
	}
	return false
}

// NeedsModificationNotice reports whether the file at p of component
// needs the modification notice in a release whose model root is modelRoot.
func NeedsModificationNotice(component, p, modelRoot string) bool {
	return needsNotice(component, p, modelRoot)
}

// CheckPath enforces canonical POSIX relative paths: no backslash, no glob
// characters, no empty, "." or ".." parts, no leading or trailing slash.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is absolute", p)
	case strings.HasSuffix(p, "/"):
		return fmt.Errorf("%q has a trailing slash", p)
	case strings.ContainsAny(p, "\\*?[]"):
		return fmt.Errorf("%q contains one of \\ * ? [ ]", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q contains a control character", p)
		}
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%q has an empty, \".\" or \"..\" part", p)
		}
	}
	return nil
}

// under reports whether p lies strictly below root, and its path below it.
func under(root, p string) (string, bool) {
	if strings.HasPrefix(p, root+"/") {
		return p[len(root)+1:], true
	}
	return "", false
}

// FilesUnder returns the inventoried files below the directory prefix.
func (r *Release) FilesUnder(prefix string) []File {
	var out []File
	for _, f := range r.Files {
		if _, ok := under(prefix, f.Path); ok {
			out = append(out, f)
		}
	}
	return out
}

// File returns the inventory entry for p.
func (r *Release) File(p string) (File, bool) {
	for _, f := range r.Files {
		if f.Path == p {
			return f, true
		}
	}
	return File{}, false
}

// Selection says which optional components to take from a bundle.
type Selection struct {
	Runtime       string // "coreai" unless set
	Plain         bool   // leave the drafter out
	IncludeExport bool   // take export/ too (a release without one is refused)
	// ExportIfPresent takes export/ when the release has one (the
	// daemon's default where the reference engine serves it).
	ExportIfPresent bool
}

// Resolve is the selection s makes of r: ExportIfPresent becomes
// IncludeExport when r has an export, and is cleared.
func (s Selection) Resolve(r *Release) Selection {
	s.IncludeExport = s.IncludeExport || s.ExportIfPresent && r.ExportPath != ""
	s.ExportIfPresent = false
	return s
}

// RuntimeName returns the selected runtime, defaulting to coreai.
func (s Selection) RuntimeName() string {
	if s.Runtime == "" {
		return ComponentCoreAI
	}
	return s.Runtime
}

// Select returns the inventory entries of the selected components:
// documentation, model, the runtime, the drafter unless Plain, export
// only if IncludeExport (or ExportIfPresent and r has one).
func (r *Release) Select(s Selection) ([]File, error) {
	rt := s.RuntimeName()
	if _, ok := r.Runtimes[rt]; !ok {
		return nil, fmt.Errorf("release.json has no %q runtime (it has %v)", rt, sortedKeys(r.Runtimes))
	}
	if s.IncludeExport && r.ExportPath == "" {
		return nil, errors.New("release.json has no export component (export_path is absent)")
	}
	s = s.Resolve(r)
	want := map[string]bool{ComponentDocumentation: true, ComponentModel: true, rt: true}
	if !s.Plain && r.Drafter != nil && r.Drafter.Runtime == rt {
		want[ComponentDrafter] = true
	}
	if s.IncludeExport {
		want[ComponentExport] = true
	}
	var out []File
	for _, f := range r.Files {
		if want[f.Component] {
			out = append(out, f)
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
