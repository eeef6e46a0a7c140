/*-------------------------------------------------------------------------
 *
 * crc32c.c
 *	  CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the SSE4.2
 *	  crc32 instruction when the CPU has it, else slice-by-8 tables.
 *
 * Slice-by-8 folds eight input bytes per step through eight 256-entry
 * tables (8 KB, built once), 4 to 6 times the speed of the one-table
 * bytewise loop; the instruction is 5 to 10 times faster again (7-9 GB/s
 * against 0.7-1.3 GB/s, best of 3 on the loaded 2-core development
 * machine: make -C src/kafka/test bench).  The choice is made once, on first use,
 * under pthread_once so that threads may call k_crc32c from the start.
 *
 *-------------------------------------------------------------------------
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define K_CRC32C_HW 1
#include <nmmintrin.h>
#endif

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static uint32_t (*crc_impl) (uint32_t crc, const uint8_t *p, size_t len);
static const char *crc_impl_name;

static uint32_t
load32_le(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) |
		((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

/* crc is the register, already inverted. */
static uint32_t
crc32c_slice8(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len >= 8)
	{
		uint32_t	lo = crc ^ load32_le(p);
		uint32_t	hi = load32_le(p + 4);

		crc = crc_table[7][lo & 0xff] ^
			crc_table[6][(lo >> 8) & 0xff] ^
			crc_table[5][(lo >> 16) & 0xff] ^
			crc_table[4][lo >> 24] ^
			crc_table[3][hi & 0xff] ^
			crc_table[2][(hi >> 8) & 0xff] ^
			crc_table[1][(hi >> 16) & 0xff] ^
			crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#ifdef K_CRC32C_HW
__attribute__((target("sse4.2")))
static uint32_t
crc32c_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t	c = crc;

	while (len >= 8)
	{
		uint64_t	v;

		memcpy(&v, p, 8);		/* x86 is little-endian, as the CRC wants */
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		c = _mm_crc32_u8((uint32_t) c, *p++);
	return (uint32_t) c;
}
#endif

static void
crc_init(void)
{
	for (uint32_t n = 0; n < 256; n++)
	{
		uint32_t	c = n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int t = 1; t < 8; t++)
			crc_table[t][n] = (crc_table[t - 1][n] >> 8) ^
				crc_table[0][crc_table[t - 1][n] & 0xff];

	crc_impl = crc32c_slice8;
	crc_impl_name = "slice-by-8";
#ifdef K_CRC32C_HW
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
	{
		crc_impl = crc32c_sse42;
		crc_impl_name = "sse4.2";
	}
#endif
}

uint32_t
k_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return ~crc_impl(~crc, buf, len);
}

uint32_t
k_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return ~crc32c_slice8(~crc, buf, len);
}

const char *
k_crc32c_impl(void)
{
	pthread_once(&crc_once, crc_init);
	return crc_impl_name;
}
