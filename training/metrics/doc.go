// Package metrics owns the accounting of a run: phase timers (where each
// iteration's time went), the breakdown table the papers print, and the
// progress line a user watches. It holds no globals; each run makes its own.
package metrics
