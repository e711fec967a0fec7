// Shared definitions of matmul.cu (an include beside the source).
#pragma once
#define TILE 2
typedef unsigned int uint;
