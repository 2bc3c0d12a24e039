package wire

import "reflect"

// Feature is what a daemon needs for an operation to be served there; hello
// lists an op among its capabilities only where its feature is present.
type Feature string

// Features (docs/PROTOCOL.md §4).
const (
	FeatureAlways     Feature = ""            // every daemon
	FeatureResidency  Feature = "residency"   // the model is under residency control (load, unload)
	FeatureStore      Feature = "store"       // the daemon serves a bundle store (forged run --repo)
	FeatureConfigFile Feature = "config_file" // the daemon was started with a config file (--config)
	FeatureTokens     Feature = "tokens"      // the daemon keeps HTTP API tokens (a data directory)
)

// OpSpec is what the protocol says about one operation.
type OpSpec struct {
	Name string
	// Admin: only root, the daemon's own uid and the admin group may call it (docs/PROTOCOL.md §6).
	Admin bool
	// Streaming: it may send events before its reply, runs beside the
	// connection's other requests and can be cancelled.
	Streaming bool
	// Feature enables it on a daemon.
	Feature Feature
	// Capability is the name hello lists it under ("" for none: hello
	// itself); ops of one family share a name (session.open and
	// session.close are "session").
	Capability string
	// Args is the op's args type (a zero value; nil: the op takes none):
	// the daemon refuses an unknown key in any op's args before running it.
	Args any
}

// CheckArgKeys refuses args (validated by ValidateRequest) holding a key
// the op's args type does not have, naming it; a handler's DecodeArgs
// checks the values and the keys of nested maps.
func (o OpSpec) CheckArgKeys(raw []byte) error {
	if isNil(raw) {
		return nil
	}
	var index map[string]int
	if o.Args != nil {
		index = fieldIndex(reflect.TypeOf(o.Args))
	}
	n, body := containerLen(raw)
	for range n {
		key := string(strPayload(body))
		if _, ok := index[key]; !ok {
			return Errorf(CodeBadRequest, "%s: unknown field args.%s", o.Name, key)
		}
		body = skipValue(skipValue(body))
	}
	return nil
}

// Ops is the operation registry: every operation of protocol 1, in the
// order hello lists their capabilities. The daemon's dispatch and its
// capability list, and AdminOps, are derived from it.
var Ops = []OpSpec{
	{Name: OpHello, Args: HelloArgs{}},
	{Name: OpStatus, Capability: OpStatus},
	{Name: OpModels, Capability: OpModels},
	{Name: OpTokenize, Capability: OpTokenize, Args: TokenizeArgs{}},
	{Name: OpDetokenize, Capability: OpDetokenize, Args: DetokenizeArgs{}},
	{Name: OpChat, Streaming: true, Capability: OpChat, Args: ChatArgs{}},
	{Name: OpGenerate, Streaming: true, Capability: OpGenerate, Args: GenerateArgs{}},
	{Name: OpSessionOpen, Capability: "session"},
	{Name: OpSessionClose, Capability: "session", Args: SessionArgs{}},
	{Name: OpCancel, Capability: OpCancel, Args: CancelArgs{}},
	{Name: OpSubscribe, Streaming: true, Capability: OpSubscribe},
	{Name: OpConfigGet, Admin: true, Capability: OpConfigGet},
	{Name: OpShutdown, Admin: true, Capability: OpShutdown},
	{Name: OpLoad, Admin: true, Streaming: true, Feature: FeatureResidency, Capability: OpLoad},
	{Name: OpUnload, Admin: true, Feature: FeatureResidency, Capability: OpUnload, Args: UnloadArgs{}},
	{Name: OpPin, Admin: true, Feature: FeatureResidency, Capability: OpPin, Args: PinArgs{}},
	{Name: OpUpdateRollback, Admin: true, Streaming: true, Feature: FeatureResidency, Capability: OpUpdateRollback},
	{Name: OpPull, Admin: true, Streaming: true, Feature: FeatureStore, Capability: OpPull, Args: RevisionArgs{}},
	{Name: OpVerify, Admin: true, Streaming: true, Feature: FeatureStore, Capability: OpVerify, Args: VerifyArgs{}},
	{Name: OpUpdateCheck, Admin: true, Streaming: true, Feature: FeatureStore, Capability: OpUpdateCheck, Args: RevisionArgs{}},
	{Name: OpUpdateApply, Admin: true, Streaming: true, Feature: FeatureStore, Capability: OpUpdateApply, Args: RevisionArgs{}},
	{Name: OpGC, Admin: true, Streaming: true, Feature: FeatureStore, Capability: OpGC, Args: GCArgs{}},
	{Name: OpConfigSet, Admin: true, Feature: FeatureConfigFile, Capability: OpConfigSet, Args: ConfigSetArgs{}},
	{Name: OpTokenCreate, Admin: true, Feature: FeatureTokens, Capability: "token", Args: TokenCreateArgs{}},
	{Name: OpTokenList, Admin: true, Feature: FeatureTokens, Capability: "token", Args: Empty{}},
	{Name: OpTokenRevoke, Admin: true, Feature: FeatureTokens, Capability: "token", Args: TokenRevokeArgs{}},
}

var opIndex = func() map[string]OpSpec {
	m := make(map[string]OpSpec, len(Ops))
	for _, o := range Ops {
		m[o.Name] = o
	}
	return m
}()

// LookupOp returns the registry's entry for name.
func LookupOp(name string) (OpSpec, bool) {
	o, ok := opIndex[name]
	return o, ok
}

// Capabilities lists, in registry order and once each, the capability
// names of the ops whose feature has(feature) reports present.
func Capabilities(has func(Feature) bool) []string {
	var caps []string
	seen := map[string]bool{}
	for _, o := range Ops {
		if o.Capability == "" || seen[o.Capability] || (o.Feature != FeatureAlways && !has(o.Feature)) {
			continue
		}
		seen[o.Capability] = true
		caps = append(caps, o.Capability)
	}
	return caps
}

// AdminOps are the operations only administrators may call (from Ops).
var AdminOps = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range Ops {
		if o.Admin {
			m[o.Name] = true
		}
	}
	return m
}()
