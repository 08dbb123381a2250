// SPDX-License-Identifier: Apache-2.0

package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseQuantile parses one quantile in percent ("99.9", "p99") into a
// level in (0, 1), rounded to 12 decimals so that "99.9" is 0.999 exactly
// as a level typed as a fraction would be.
func ParseQuantile(s string) (float64, error) {
	f := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "p")
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || !(v > 0 && v < 100) {
		return 0, fmt.Errorf("quantile %q: want a percentage between 0 and 100, such as 99 or 99.9", s)
	}
	return math.Round(v*1e10) / 1e12, nil
}

// ParseQuantiles parses a comma-separated list of quantiles in percent
// ("50,90,99,99.9", a leading p allowed) into levels; "" and "none" give
// nil.
func ParseQuantiles(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		p, err := ParseQuantile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
