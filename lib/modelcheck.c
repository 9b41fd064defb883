/* Checking a compiled model's file before dlopen (modelcheck.h). Layout from
 * the System V ABI's ELF chapters (<elf.h>). Every offset and size is checked
 * against the file's length before it is followed, and structures are copied
 * out (a hostile file's offsets need not be aligned). */
#include "modelcheck.h"

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tgraph/model.h>
#include <unistd.h>

#include "error.h"
#include "modelnote.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#error "modelcheck.c: add this machine's EM_ number"
#endif

/* The functions of <tgraph/model.h> ABI version 1; tgraph_set_profile and
 * tgraph_model_run_ex came later and are optional. */
static const char *const abi_functions[] = {
    "tgraph_abi_version", "tgraph_strerror", "tgraph_last_error", "tgraph_model_open",
    "tgraph_model_close", "tgraph_model_num_inputs", "tgraph_model_num_outputs",
    "tgraph_model_num_symbols", "tgraph_model_input_info", "tgraph_model_output_info",
    "tgraph_model_symbol_info", "tgraph_model_output_dims", "tgraph_model_run",
    "tgraph_set_num_threads", "tgraph_num_threads",
};
enum { NFUNC = sizeof abi_functions / sizeof *abi_functions };

/* True when [off, off + n) lies inside the file. */
static bool inside(size_t len, uint64_t off, uint64_t n)
{
    return off <= len && n <= len - off;
}

static int check_header(const uint8_t *p, size_t len, Elf64_Ehdr *h)
{
    if (len < 4 || memcmp(p, ELFMAG, SELFMAG) != 0)
        return tg_err("not an ELF file (a compiled model is a shared object from tcompile)");
    if (len < sizeof(Elf64_Ehdr))
        return tg_err("truncated ELF file (%zu bytes, shorter than its header)", len);
    memcpy(h, p, sizeof *h);
    if (h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != ELFDATA2LSB ||
        h->e_ident[EI_VERSION] != EV_CURRENT || h->e_machine != HOST_MACHINE)
        return tg_err("an ELF file for another machine (class %d, data %d, machine %d)",
                      h->e_ident[EI_CLASS], h->e_ident[EI_DATA], h->e_machine);
    if (h->e_type != ET_DYN)
        return tg_err("an ELF %s, not a shared object",
                      h->e_type == ET_EXEC ? "executable" : h->e_type == ET_REL ?
                      "object file (.o)" : "file of another type");
    if (h->e_phentsize != sizeof(Elf64_Phdr) || h->e_phnum == 0 ||
        !inside(len, h->e_phoff, (uint64_t)h->e_phnum * sizeof(Elf64_Phdr)))
        return tg_err("truncated or corrupt ELF file (program headers past the end)");
    return 0;
}

/* Every segment dlopen maps must lie inside the file: reading a page past
 * its end is SIGBUS. The notes, read by check_version, too. */
static int check_segments(const uint8_t *p, size_t len, const Elf64_Ehdr *h)
{
    bool load = false, dynamic = false;
    for (int i = 0; i < h->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, p + h->e_phoff + (size_t)i * sizeof ph, sizeof ph);
        if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC && ph.p_type != PT_NOTE)
            continue;
        if (!inside(len, ph.p_offset, ph.p_filesz))
            return tg_err("truncated ELF file (segment %d needs bytes %llu..%llu, the file has "
                          "%zu)", i, (unsigned long long)ph.p_offset,
                          (unsigned long long)ph.p_offset + ph.p_filesz, len);
        if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
            return tg_err("corrupt ELF file (segment %d holds more than it maps)", i);
        load |= ph.p_type == PT_LOAD;
        dynamic |= ph.p_type == PT_DYNAMIC;
    }
    if (!load || !dynamic)
        return tg_err("corrupt ELF file (no %s segment)", load ? "dynamic" : "loadable");
    return 0;
}

/* Section i into *s: false when there is none or its bytes are not all inside
 * the file. */
static bool section(const uint8_t *p, size_t len, const Elf64_Ehdr *h, unsigned i, Elf64_Shdr *s)
{
    if (i >= h->e_shnum)
        return false;
    memcpy(s, p + h->e_shoff + (size_t)i * sizeof *s, sizeof *s);
    return s->sh_type != SHT_NOBITS && inside(len, s->sh_offset, s->sh_size);
}

/* Every ABI function must be defined in the dynamic symbol table. */
static int check_symbols(const uint8_t *p, size_t len, const Elf64_Ehdr *h)
{
    if (h->e_shentsize != sizeof(Elf64_Shdr) ||
        !inside(len, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr)))
        return tg_err("truncated or corrupt ELF file (section headers past the end)");
    Elf64_Shdr sym, str;
    bool have = false;
    for (unsigned i = 0; i < h->e_shnum && !have; i++)
        have = section(p, len, h, i, &sym) && sym.sh_type == SHT_DYNSYM;
    if (!have || !section(p, len, h, sym.sh_link, &str) || str.sh_type != SHT_STRTAB ||
        sym.sh_entsize != sizeof(Elf64_Sym))
        return tg_err("not a compiled tgraph model (no dynamic symbol table)");
    const char *names = (const char *)(p + str.sh_offset);
    bool found[NFUNC] = {false};
    for (uint64_t i = 0; i < sym.sh_size / sizeof(Elf64_Sym); i++) {
        Elf64_Sym s;
        memcpy(&s, p + sym.sh_offset + i * sizeof s, sizeof s);
        if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_FUNC ||
            s.st_name >= str.sh_size)
            continue;
        const char *name = names + s.st_name;
        size_t room = str.sh_size - s.st_name;
        for (int k = 0; k < NFUNC; k++)
            if (strnlen(name, room) == strlen(abi_functions[k]) &&
                !memcmp(name, abi_functions[k], strlen(abi_functions[k])))
                found[k] = true;
    }
    for (int k = 0; k < NFUNC; k++)
        if (!found[k])
            return tg_err("not a compiled tgraph model: no %s", abi_functions[k]);
    return 0;
}

/* The ABI version in the model's tgraph note must be this header's. A .so
 * without the note (tcompile wrote none before) passes: its version is
 * compared after dlopen. */
static int check_version(const uint8_t *p, const Elf64_Ehdr *h)
{
    for (int i = 0; i < h->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, p + h->e_phoff + (size_t)i * sizeof ph, sizeof ph);
        if (ph.p_type != PT_NOTE)
            continue;
        uint32_t v;     /* check_segments saw the note inside the file */
        int found = tg_model_note_version(p + ph.p_offset, ph.p_filesz,
                                          ph.p_align == 8 ? 8 : 4, &v);
        if (found < 0)
            return -1;
        if (found && v != TGRAPH_MODEL_ABI_VERSION)
            return tg_err("model ABI version %u, this tgraph reads version %d: recompile it "
                          "with tcompile", v, TGRAPH_MODEL_ABI_VERSION);
        if (found)
            return 0;
    }
    return 0;
}

int tg_model_check_mem(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    Elf64_Ehdr h;
    if (check_header(p, len, &h) < 0 || check_segments(p, len, &h) < 0 ||
        check_symbols(p, len, &h) < 0 || check_version(p, &h) < 0)
        return -1;
    return 0;
}

int tg_model_check(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return tg_err("cannot open: %m");
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tg_err("not a regular file (a compiled model is a shared object file)");
    }
    if (st.st_size == 0) {
        close(fd);
        return tg_err("empty file (a compiled model is a shared object from tcompile)");
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return tg_err("cannot map: %m");
    int rc = tg_model_check_mem(m, (size_t)st.st_size);
    munmap(m, (size_t)st.st_size);
    return rc;
}
