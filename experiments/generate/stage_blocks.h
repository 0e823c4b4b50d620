// A generate job run as pipeline stages (`mpirun -np S h2oflex generate ...`): rank 0 reads the
// input, runs the job and writes the output as one process would; every other rank runs its
// stage of each block rank 0 starts. Before each block rank 0 broadcasts the block's work (the
// prompts and sampling settings), and after the last one an end-of-job message. A collective:
// rank 0 calls share_block for every block and share_end once; the others call follow_blocks.
#pragma once

#include "experiments/generate/generate_job.h"
#include "runtime/dist/transport.h"

namespace h2oflex::generate {

// Rank 0: the work of the block every stage is about to run. Only generate's fields travel
// (prompts, prompt_len, gen_len, temperature, top_p, seed, row_keys); scoring work (forced
// tokens, a logits observer, an eviction override) is refused.
void share_block(Transport& transport, const BlockWork& work);
// Rank 0: the job has ended (finished, interrupted or failed before its next block).
void share_end(Transport& transport);
// Every other rank: runs `run_block` (its stage) on each block rank 0 shares, until the end;
// returns the number of blocks run.
int64_t follow_blocks(Transport& transport, const BlockRunner& run_block);

}  // namespace h2oflex::generate
