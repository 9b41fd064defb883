# tgraph.mk: Make rules that build compiled models from PyTorch and ONNX files.
#
#   include $(shell pkg-config --variable=pkgdatadir tgraph)/tgraph.mk
#   all: model.so
#
# model.so is then made from model.tg, itself made from model.pt2 (a
# torch.export.save archive) or model.onnx; model.q8.so from model.q8.tg, the
# int8 quantization of model.tg, model.s24.so from model.s24.tg, its 2:4
# pruning. Set the tools and their flags as usual:
#
#   TEXPORT_FLAGS = --range batch=1:64
#   TQUANT_FLAGS = --calib calib/
#   TCOMPILE_FLAGS = --cpu x86-64-v3

TEXPORT ?= texport
TQUANT ?= tquant
TSPARSE ?= tsparse
TCOMPILE ?= tcompile
TEXPORT_FLAGS ?=
TQUANT_FLAGS ?=
TSPARSE_FLAGS ?=
TCOMPILE_FLAGS ?=

%.tg: %.pt2
	$(TEXPORT) $(TEXPORT_FLAGS) -o $@ $<

%.tg: %.onnx
	$(TEXPORT) $(TEXPORT_FLAGS) -o $@ $<

# the shorter stem wins, so model.q8.tg comes from model.tg, not model.q8.pt2
%.q8.tg: %.tg
	$(TQUANT) $(TQUANT_FLAGS) -o $@ $<

%.s24.tg: %.tg
	$(TSPARSE) $(TSPARSE_FLAGS) -o $@ $<

%.so: %.tg
	$(TCOMPILE) $(TCOMPILE_FLAGS) -o $@ $<

# graphs are worth keeping: they are what tlog and trun look at
.PRECIOUS: %.tg
