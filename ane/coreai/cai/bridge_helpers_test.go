package cai

import (
	"testing"

	"github.com/forgedaemon/forged/ane/coreai/standin/standintest"
)

// The tests run over the stand-in bridge, built once per test binary
// (standintest.Main, standintest.Bridge).
func TestMain(m *testing.M) { standintest.Main(m) }
