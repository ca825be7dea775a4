// Package elastic keeps the membership of a synchronous group that
// survives a lost or an added worker (dsgd train --elastic MIN:MAX).
//
// A Coordinator, served over package rpc by the launcher (or by dsgd
// elastic-coordinator for ranks started by hand), numbers the group's
// generations. Every worker holds one connection to it with a Client:
//
//   - Next says the worker is ready for the next generation, with the
//     iterations it has completed and the address it would gather the
//     group at as rank 0; it returns the worker's Place once the
//     generation is formed: its rank, the size, rank 0's address and the
//     iteration the generation starts from.
//   - Check, called at the iteration boundaries where the scheme may
//     change members, says whether the group stops there to re-form (a
//     worker is waiting to join, or a member's connection ended). The
//     first member to ask about an iteration fixes the answer for every
//     member, so all of them stop after the same iteration.
//
// A generation re-forms when a member calls Next: the coordinator waits
// until every member of the current generation has either called Next or
// gone (its connection ended, or Config.Timeout passed: a frozen
// process). Rank 0 of the new generation is the member that completed
// the most iterations (the lowest old rank among equals), so its weights
// and solver state are the ones the others adopt; then come the other
// survivors in their old order and the joiners in arrival order, up to
// Max. Fewer than Min ends the run for everyone waiting, with an error
// that says so. A group with a server rank (sync-ps, Config.Server) keeps
// it last in every generation and starts each from its state; its loss
// ends the run.
//
// The package moves no weights: the workers connect their own transport
// at rank 0's address and copy the state there (training/train).
package elastic
