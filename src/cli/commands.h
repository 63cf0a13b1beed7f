#pragma once
// The subcommands that work on whole models print the workflow library's reports
// (src/workflow/); this face only parses options and renders.
#include "workflow/model_inventory.h"
#include "workflow/predict.h"
