package ref

import (
	"errors"
	"fmt"
)

// Config holds the model dimensions the forward pass needs. It is filled
// from config.json by ConfigFromModel, or directly by tests.
type Config struct {
	Vocab, Hidden, Intermediate, Layers int
	// Full attention layers.
	Heads, KVHeads, HeadDim, RotaryDim int
	RopeTheta                          float64
	// Gated DeltaNet layers.
	LinKeyHeads, LinValueHeads, LinKeyDim, LinValueDim, ConvKernel int
	// FullAttention[i] is true when layer i is a full attention layer.
	FullAttention []bool
	Eps           float64
}

func (c *Config) keyDim() int   { return c.LinKeyHeads * c.LinKeyDim }
func (c *Config) valueDim() int { return c.LinValueHeads * c.LinValueDim }
func (c *Config) convDim() int  { return 2*c.keyDim() + c.valueDim() }

// Validate checks the dimensions are usable together.
func (c *Config) Validate() error {
	pos := []struct {
		name string
		v    int
	}{{"vocab_size", c.Vocab}, {"hidden_size", c.Hidden}, {"intermediate_size", c.Intermediate},
		{"num_hidden_layers", c.Layers}, {"linear_conv_kernel_dim", c.ConvKernel}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("model config: %s = %d, must be positive", p.name, p.v)
		}
	}
	if len(c.FullAttention) != c.Layers {
		return fmt.Errorf("model config: %d layer types for %d layers", len(c.FullAttention), c.Layers)
	}
	anyFull, anyLinear := false, false
	for _, f := range c.FullAttention {
		anyFull = anyFull || f
		anyLinear = anyLinear || !f
	}
	if anyFull {
		if c.Heads <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0 || c.Heads%c.KVHeads != 0 {
			return fmt.Errorf("model config: attention heads %d / kv heads %d / head_dim %d: heads must be a positive multiple of kv heads",
				c.Heads, c.KVHeads, c.HeadDim)
		}
		if c.RotaryDim < 0 || c.RotaryDim > c.HeadDim || c.RotaryDim%2 != 0 {
			return fmt.Errorf("model config: rotary dims %d must be even and at most head_dim %d", c.RotaryDim, c.HeadDim)
		}
		if c.RopeTheta <= 0 {
			return errors.New("model config: rope_theta must be positive")
		}
	}
	if anyLinear {
		if c.LinKeyHeads <= 0 || c.LinValueHeads <= 0 || c.LinKeyDim <= 0 || c.LinValueDim <= 0 ||
			c.LinValueHeads%c.LinKeyHeads != 0 {
			return fmt.Errorf("model config: linear key heads %d / value heads %d: value heads must be a positive multiple of key heads",
				c.LinKeyHeads, c.LinValueHeads)
		}
	}
	if c.Eps <= 0 {
		return errors.New("model config: rms_norm_eps must be positive")
	}
	return nil
}
