package coreai

import (
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin"
	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

// The tests run the drivers over the stand-in bridge (ane/coreai/standin),
// built once per test binary and attached (standintest.Bridge). Packages
// standin writes compute with its programs; the tests' own models compute
// with the handlers they register (standin.Handle). What the stand-in's
// tests use too (the tiny model, comparisons with ane/ref, the fault
// injection) is standintest's.

func TestMain(m *testing.M) { standintest.Main(m) }

var (
	testBridge = standintest.Bridge
	tiny       = standintest.Tiny
	wantErr    = standintest.WantErr
	randIDs    = standintest.RandIDs
	live       = standin.Live
	handle     = standintest.Handle
	failRun    = standintest.FailRun
	clearFault = standintest.ClearFault
)
