// cuda_pipeline.h for the CPU backend: the __pipeline_* primitives (cuda_pipeline_primitives.h).
// NVIDIA's header also declares nvcuda::experimental::pipeline; the rewriter refuses that
// (could not grade on the CPU backend) and suggests the primitives.
#pragma once
#include "cuda_pipeline_primitives.h"
