# The flash-attention kernels, their test and the bench's shared library, built
# with nvcc alone (no configure needed: the GPU machine runs this directly).
#   make -f lib/backend/cuda/flash.mk [srcdir=.] [NVCC=nvcc] check-cuda | bench-cuda
# Makefile.am calls it for `make cuda` and `make check-cuda` when configure
# found CUDA. Outputs go under $(CUDA_BUILD).
srcdir ?= .
NVCC ?= nvcc
CUDA_BUILD ?= cuda-build
# sm_80 machine code for Ampere, sm_90 for Hopper, PTX for later chips
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
	-gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -Wall
FLASH_DEFS ?=
FLASH_HDRS = $(srcdir)/lib/backend/cuda/flash.h $(srcdir)/lib/backend/cuda/flash_fwd.cuh \
	$(srcdir)/lib/backend/cuda/wgmma.cuh
# the Hopper kernels: wgmma and setmaxnreg need the sm_90a target
FLASH_OBJS = $(CUDA_BUILD)/flash.o $(CUDA_BUILD)/flash_sm90.o $(CUDA_BUILD)/flash_fa3.o

cuda: $(CUDA_BUILD)/libtgflash.so $(CUDA_BUILD)/test_flash

$(CUDA_BUILD)/flash.o: $(srcdir)/lib/backend/cuda/flash.cu $(FLASH_HDRS)
	@mkdir -p $(CUDA_BUILD)
	$(NVCC) $(NVCCFLAGS) $(CUDA_ARCH) $(FLASH_DEFS) -I$(srcdir)/lib -c -o $@ $<

$(CUDA_BUILD)/flash_sm90.o: $(srcdir)/lib/backend/cuda/flash_sm90.cu $(FLASH_HDRS)
	@mkdir -p $(CUDA_BUILD)
	$(NVCC) $(NVCCFLAGS) -gencode arch=compute_90a,code=sm_90a $(FLASH_DEFS) -I$(srcdir)/lib -c -o $@ $<

$(CUDA_BUILD)/flash_fa3.o: $(srcdir)/lib/backend/cuda/flash_fa3.cu $(FLASH_HDRS)
	@mkdir -p $(CUDA_BUILD)
	$(NVCC) $(NVCCFLAGS) -gencode arch=compute_90a,code=sm_90a $(FLASH_DEFS) -I$(srcdir)/lib -c -o $@ $<

$(CUDA_BUILD)/libtgflash.so: $(FLASH_OBJS)
	$(NVCC) $(CUDA_ARCH) -shared -o $@ $(FLASH_OBJS)

$(CUDA_BUILD)/test_flash: $(srcdir)/tests/cuda/test_flash.cu $(FLASH_OBJS) $(FLASH_HDRS)
	$(NVCC) $(NVCCFLAGS) $(CUDA_ARCH) -I$(srcdir)/lib -o $@ $< $(FLASH_OBJS)

check-cuda: $(CUDA_BUILD)/test_flash
	$(CUDA_BUILD)/test_flash

bench-cuda: $(CUDA_BUILD)/libtgflash.so
	python3 $(srcdir)/bench/cuda/attention/bench.py $(CUDA_BUILD)/libtgflash.so

.PHONY: cuda check-cuda bench-cuda
