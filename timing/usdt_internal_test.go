// SPDX-License-Identifier: Apache-2.0

package timing

import (
	"strings"
	"testing"

	"github.com/tickprof/tickprof/internal/loader"
)

// TestFilteredUnderBudget: a py: target (filtered in BPF) is refused under
// an overhead budget, an unfiltered USDT pair and a native function are
// not, and nothing is refused without a budget.
func TestFilteredUnderBudget(t *testing.T) {
	py := loader.Spec{Kind: loader.KindUSDT, Name: "py:mod.f", USDT: &loader.USDTPair{Name: "f", File: "mod.py"}}
	pair := loader.Spec{Kind: loader.KindUSDT, Name: "usdt:p:a,b", USDT: &loader.USDTPair{}}
	native := loader.Spec{Kind: loader.KindUser, Name: "f"}
	if err := filteredUnderBudget([]loader.Spec{native, py}, true); err == nil || !strings.Contains(err.Error(), "py:mod.f cannot be timed under an overhead budget") {
		t.Errorf("py: under a budget: %v", err)
	}
	if err := filteredUnderBudget([]loader.Spec{native, pair}, true); err != nil {
		t.Errorf("an unfiltered pair under a budget: %v", err)
	}
	if err := filteredUnderBudget([]loader.Spec{py}, false); err != nil {
		t.Errorf("py: without a budget: %v", err)
	}
}
