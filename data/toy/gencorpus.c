/*
 * gencorpus.c: writes the toy English->French corpus (train/dev/test .tsv) and its gold word
 * alignments (.align, Pharaoh "i-j" links) that the translator is trained and judged on.
 *
 * A small grammar is sampled with a seeded PRNG. Each English sentence is built together with
 * its one French translation as a list of French morphemes that remember which English words
 * they translate; elision (j'aime, l'homme) and contraction (au, du) then merge morphemes into
 * words, uniting their links. The same seed always reproduces every file byte for byte.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/files.h"
#include "base/usage.h"
#include "base/utf8.h"

#define DEFAULT_DIR    "data/toy"
#define DEFAULT_DIR_ZH "data/toy-zh"
#define DEFAULT_SEED   20240521u
#define TRAIN_PAIRS    12000 /* distinct pairs, the showcase pairs included */
/* Each showcase pair appears this many times in train: a pair whose words nothing else uses
 * (machine learning) is then learned whatever the round-off of a particular training run. */
#define SHOWCASE_COPIES 3
#define DEV_PAIRS       500
#define TEST_PAIRS      500
#define MIN_WORDS       2 /* sentence length bounds, checked on both sides */
#define MAX_WORDS       12
#define MAX_EN          16 /* English words in a draft, a little above MAX_WORDS */
#define MAX_FR          24 /* French morphemes in a draft, before elision merges them */
#define WORD_CAP        48 /* bytes of one French word (UTF-8), merges and '?' included */
#define LINE_CAP        512

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors and memory ------------------------------------------------------------------ */

static _Noreturn void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("gencorpus: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *xrealloc(void *p, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) die("out of memory");
    p = realloc(p, count && size ? count * size : 1);
    if (!p) die("out of memory");
    return p;
}

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n, 1), s, n);
}

/* ---- PRNG: splitmix64, small and fully specified, so output never depends on the libc --- */

typedef struct {
    uint64_t state;
} Rng;

static uint64_t rng_next(Rng *rng) {
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); the modulo bias (below n / 2^64) is irrelevant here. */
static size_t rng_below(Rng *rng, size_t n) {
    return (size_t)(rng_next(rng) % n);
}

static bool rng_percent(Rng *rng, unsigned percent) {
    return rng_below(rng, 100) < percent;
}

/* Index drawn with probability proportional to weights[i]; at least one weight is non-zero. */
static size_t rng_weighted(Rng *rng, const unsigned *weights, size_t n) {
    unsigned total = 0;
    for (size_t i = 0; i < n; i++) total += weights[i];
    size_t r = rng_below(rng, total);
    for (size_t i = 0;; i++) {
        if (r < weights[i]) return i;
        r -= weights[i];
    }
}

/* ---- lexicon ----------------------------------------------------------------------------- */

typedef enum { MASC, FEM } Gender;

/* Grammatical person of the subject: indexes every conjugation table below. */
enum { P_1SG, P_2SG, P_3SG, P_1PL, P_3PL, PERSONS };

/* What a noun denotes; verbs, adjectives and prepositions list the kinds they accept, which
 * keeps sentences sensible ("I drink milk", never "I drink the chair"). */
enum {
    K_PERSON = 1u << 0,
    K_FAMILY = 1u << 1, /* brother, sister...: "my sister" rather than "the sister" */
    K_ANIMAL = 1u << 2,
    K_FOOD = 1u << 3,  /* countable: an apple */
    K_DRINK = 1u << 4, /* uncountable liquids: water */
    K_MEAL = 1u << 5,  /* uncountable food: bread */
    K_TEXT = 1u << 6,
    K_THING = 1u << 7, /* small objects one can carry */
    K_BIG = 1u << 8,   /* furniture, cars, houses */
    K_OPENABLE = 1u << 9,
    K_PLACE = 1u << 10, /* destinations of "go to" / "come from" */
    K_IN = 1u << 11,    /* can follow "in the" */
    K_ON = 1u << 12,
    K_UNDER = 1u << 13,
    K_SEAT = 1u << 14,   /* can follow "sit on the" */
    K_UNIQUE = 1u << 15, /* one per person, never counted: "my mother", not "two mothers" */
};
#define K_ANIMATE (K_PERSON | K_ANIMAL)

typedef struct {
    const char *en, *en_pl; /* en_pl NULL: an uncountable noun (no article in English) */
    const char *fr, *fr_pl;
    Gender gender;
    bool elides; /* French begins with a vowel sound, h muet included: l'homme, l'eau */
    unsigned kinds;
    const char *zh;         /* Chinese has one form: 猫 is a cat, the cat and cats */
    const char *zh_measure; /* its classifier after a number (一只猫); NULL: uncountable */
} Noun;

static const Noun NOUNS[] = {
    {"man", "men", "homme", "hommes", MASC, true, K_PERSON, "男人", "个"},
    {"woman", "women", "femme", "femmes", FEM, false, K_PERSON, "女人", "个"},
    {"boy", "boys", "garçon", "garçons", MASC, false, K_PERSON, "男孩", "个"},
    {"girl", "girls", "fille", "filles", FEM, false, K_PERSON, "女孩", "个"},
    {"father", "fathers", "père", "pères", MASC, false, K_PERSON | K_FAMILY | K_UNIQUE, "爸爸",
     "个"},
    {"mother", "mothers", "mère", "mères", FEM, false, K_PERSON | K_FAMILY | K_UNIQUE, "妈妈",
     "个"},
    {"brother", "brothers", "frère", "frères", MASC, false, K_PERSON | K_FAMILY, "哥哥", "个"},
    {"sister", "sisters", "sœur", "sœurs", FEM, false, K_PERSON | K_FAMILY, "姐姐", "个"},
    {"cat", "cats", "chat", "chats", MASC, false, K_ANIMAL, "猫", "只"},
    {"dog", "dogs", "chien", "chiens", MASC, false, K_ANIMAL, "狗", "只"},
    {"bird", "birds", "oiseau", "oiseaux", MASC, true, K_ANIMAL, "鸟", "只"},
    {"horse", "horses", "cheval", "chevaux", MASC, false, K_ANIMAL, "马", "匹"},
    {"mouse", "mice", "souris", "souris", FEM, false, K_ANIMAL, "老鼠", "只"},
    {"cow", "cows", "vache", "vaches", FEM, false, K_ANIMAL, "牛", "头"},
    {"rabbit", "rabbits", "lapin", "lapins", MASC, false, K_ANIMAL, "兔子", "只"},
    {"elephant", "elephants", "éléphant", "éléphants", MASC, true, K_ANIMAL, "大象", "头"},
    {"apple", "apples", "pomme", "pommes", FEM, false, K_FOOD, "苹果", "个"},
    {"cake", "cakes", "gâteau", "gâteaux", MASC, false, K_FOOD, "蛋糕", "块"},
    {"egg", "eggs", "œuf", "œufs", MASC, true, K_FOOD, "鸡蛋", "个"},
    {"banana", "bananas", "banane", "bananes", FEM, false, K_FOOD, "香蕉", "根"},
    {"water", NULL, "eau", NULL, FEM, true, K_DRINK, "水", NULL},
    {"milk", NULL, "lait", NULL, MASC, false, K_DRINK, "牛奶", NULL},
    {"coffee", NULL, "café", NULL, MASC, false, K_DRINK, "咖啡", NULL},
    {"tea", NULL, "thé", NULL, MASC, false, K_DRINK, "茶", NULL},
    {"juice", NULL, "jus", NULL, MASC, false, K_DRINK, "果汁", NULL},
    {"bread", NULL, "pain", NULL, MASC, false, K_MEAL, "面包", NULL},
    {"cheese", NULL, "fromage", NULL, MASC, false, K_MEAL, "奶酪", NULL},
    {"soup", NULL, "soupe", NULL, FEM, false, K_MEAL, "汤", NULL},
    {"book", "books", "livre", "livres", MASC, false, K_TEXT | K_THING | K_OPENABLE, "书", "本"},
    {"letter", "letters", "lettre", "lettres", FEM, false, K_TEXT | K_THING | K_OPENABLE, "信",
     "封"},
    {"newspaper", "newspapers", "journal", "journaux", MASC, false, K_TEXT | K_THING, "报纸", "份"},
    {"story", "stories", "histoire", "histoires", FEM, true, K_TEXT, "故事", "个"},
    {"key", "keys", "clé", "clés", FEM, false, K_THING, "钥匙", "把"},
    {"bag", "bags", "sac", "sacs", MASC, false, K_THING | K_OPENABLE, "包", "个"},
    {"hat", "hats", "chapeau", "chapeaux", MASC, false, K_THING, "帽子", "顶"},
    {"ball", "balls", "ballon", "ballons", MASC, false, K_THING, "球", "个"},
    {"umbrella", "umbrellas", "parapluie", "parapluies", MASC, false, K_THING | K_OPENABLE, "伞",
     "把"},
    {"bottle", "bottles", "bouteille", "bouteilles", FEM, false, K_THING | K_OPENABLE, "瓶子",
     "个"},
    {"box", "boxes", "boîte", "boîtes", FEM, false, K_THING | K_OPENABLE, "盒子", "个"},
    {"computer", "computers", "ordinateur", "ordinateurs", MASC, true, K_THING, "电脑", "台"},
    {"car", "cars", "voiture", "voitures", FEM, false, K_BIG | K_IN | K_UNDER, "车", "辆"},
    {"house", "houses", "maison", "maisons", FEM, false, K_BIG | K_IN, "房子", "座"},
    {"table", "tables", "table", "tables", FEM, false, K_BIG | K_ON | K_UNDER, "桌子", "张"},
    {"chair", "chairs", "chaise", "chaises", FEM, false, K_BIG | K_ON | K_UNDER | K_SEAT, "椅子",
     "把"},
    {"bed", "beds", "lit", "lits", MASC, false, K_BIG | K_ON | K_UNDER | K_SEAT, "床", "张"},
    {"sofa", "sofas", "canapé", "canapés", MASC, false, K_BIG | K_ON | K_SEAT, "沙发", "张"},
    {"mat", "mats", "tapis", "tapis", MASC, false, K_BIG | K_ON | K_SEAT, "垫子", "块"},
    {"door", "doors", "porte", "portes", FEM, false, K_BIG | K_OPENABLE, "门", "扇"},
    {"window", "windows", "fenêtre", "fenêtres", FEM, false, K_BIG | K_OPENABLE, "窗户", "扇"},
    {"tree", "trees", "arbre", "arbres", MASC, true, K_BIG | K_UNDER, "树", "棵"},
    {"garden", "gardens", "jardin", "jardins", MASC, false, K_IN, "花园", "个"},
    {"kitchen", "kitchens", "cuisine", "cuisines", FEM, false, K_IN, "厨房", "个"},
    {"park", "parks", "parc", "parcs", MASC, false, K_PLACE | K_IN, "公园", "个"},
    {"market", "markets", "marché", "marchés", MASC, false, K_PLACE, "市场", "个"},
    {"school", "schools", "école", "écoles", FEM, true, K_PLACE, "学校", "所"},
    {"beach", "beaches", "plage", "plages", FEM, false, K_PLACE, "海滩", "个"},
    {"station", "stations", "gare", "gares", FEM, false, K_PLACE, "车站", "个"},
    {"library", "libraries", "bibliothèque", "bibliothèques", FEM, false, K_PLACE, "图书馆", "个"},
    {"hospital", "hospitals", "hôpital", "hôpitaux", MASC, true, K_PLACE, "医院", "家"},
    {"museum", "museums", "musée", "musées", MASC, false, K_PLACE, "博物馆", "个"},
};

/* French adjective and profession forms, in this order. */
enum { MS, FS, MP, FP };

static int agreement(Gender gender, bool plural) {
    return (plural ? MP : MS) + (gender == FEM);
}

typedef struct {
    const char *en;
    const char *fr[4];       /* MS, FS, MP, FP */
    unsigned kinds;          /* nouns it may describe */
    bool before_noun;        /* le petit chat, but le chat noir */
    bool attributive_only;   /* never after "is": la voiture est neuve, not nouvelle */
    const char *fr_ms_vowel; /* masculine singular before a vowel: un bel oiseau */
    const char *zh;          /* before a noun: 黑猫, 漂亮的鸟 */
    const char *zh_pred;     /* after a subject: 猫很高兴, 车是红色的 */
    bool zh_shi;             /* zh_pred follows 是 (colours); otherwise 很 (or 不) */
} Adjective;

#define K_OBJECTS (K_THING | K_BIG)
static const Adjective ADJECTIVES[] = {
    {"black",
     {"noir", "noire", "noirs", "noires"},
     K_ANIMAL | K_OBJECTS,
     false,
     false,
     NULL,
     "黑",
     "黑色的",
     true},
    {"white",
     {"blanc", "blanche", "blancs", "blanches"},
     K_ANIMAL | K_OBJECTS,
     false,
     false,
     NULL,
     "白",
     "白色的",
     true},
    {"grey",
     {"gris", "grise", "gris", "grises"},
     K_ANIMAL | K_OBJECTS,
     false,
     false,
     NULL,
     "灰",
     "灰色的",
     true},
    {"red",
     {"rouge", "rouge", "rouges", "rouges"},
     K_OBJECTS,
     false,
     false,
     NULL,
     "红色的",
     "红色的",
     true},
    {"green",
     {"vert", "verte", "verts", "vertes"},
     K_OBJECTS,
     false,
     false,
     NULL,
     "绿色的",
     "绿色的",
     true},
    {"blue",
     {"bleu", "bleue", "bleus", "bleues"},
     K_OBJECTS,
     false,
     false,
     NULL,
     "蓝色的",
     "蓝色的",
     true},
    {"yellow",
     {"jaune", "jaune", "jaunes", "jaunes"},
     K_OBJECTS,
     false,
     false,
     NULL,
     "黄色的",
     "黄色的",
     true},
    {"happy",
     {"heureux", "heureuse", "heureux", "heureuses"},
     K_ANIMATE,
     false,
     false,
     NULL,
     "快乐的",
     "高兴",
     false},
    {"sad",
     {"triste", "triste", "tristes", "tristes"},
     K_ANIMATE,
     false,
     false,
     NULL,
     "难过的",
     "难过",
     false},
    {"tired",
     {"fatigué", "fatiguée", "fatigués", "fatiguées"},
     K_ANIMATE,
     false,
     false,
     NULL,
     "疲倦的",
     "累",
     false},
    {"kind",
     {"gentil", "gentille", "gentils", "gentilles"},
     K_ANIMATE,
     false,
     false,
     NULL,
     "善良的",
     "善良",
     false},
    {"heavy",
     {"lourd", "lourde", "lourds", "lourdes"},
     K_OBJECTS,
     false,
     false,
     NULL,
     "很重的",
     "重",
     false},
    {"expensive",
     {"cher", "chère", "chers", "chères"},
     K_OBJECTS,
     false,
     false,
     NULL,
     "昂贵的",
     "贵",
     false},
    {"small",
     {"petit", "petite", "petits", "petites"},
     K_ANIMATE | K_OBJECTS,
     true,
     false,
     NULL,
     "小",
     "小",
     false},
    /* not for people: un grand homme is a great man */
    {"big",
     {"grand", "grande", "grands", "grandes"},
     K_ANIMAL | K_OBJECTS,
     true,
     false,
     NULL,
     "大",
     "大",
     false},
    {"young",
     {"jeune", "jeune", "jeunes", "jeunes"},
     K_ANIMATE,
     true,
     false,
     NULL,
     "年轻的",
     "年轻",
     false},
    {"beautiful",
     {"beau", "belle", "beaux", "belles"},
     K_ANIMATE | K_OBJECTS,
     true,
     false,
     "bel",
     "漂亮的",
     "漂亮",
     false},
    {"old",
     {"vieux", "vieille", "vieux", "vieilles"},
     K_ANIMATE | K_OBJECTS,
     true,
     false,
     "vieil",
     "老",
     "老",
     false},
    {"new",
     {"nouveau", "nouvelle", "nouveaux", "nouvelles"},
     K_OBJECTS,
     true,
     true,
     "nouvel",
     "新",
     "新",
     false},
};

/* Professions follow "to be" without an article in French: je suis étudiant. */
typedef struct {
    const char *en, *en_pl;
    const char *fr[4];
    const char *zh;
} Profession;

static const Profession PROFESSIONS[] = {
    {"student", "students", {"étudiant", "étudiante", "étudiants", "étudiantes"}, "学生"},
    {"teacher", "teachers", {"enseignant", "enseignante", "enseignants", "enseignantes"}, "老师"},
    {"doctor", "doctors", {"médecin", "médecin", "médecins", "médecins"}, "医生"},
    {"singer", "singers", {"chanteur", "chanteuse", "chanteurs", "chanteuses"}, "歌手"},
    {"cook", "cooks", {"cuisinier", "cuisinière", "cuisiniers", "cuisinières"}, "厨师"},
    {"nurse", "nurses", {"infirmier", "infirmière", "infirmiers", "infirmières"}, "护士"},
};

/* One translation per English pronoun: "you" is always tu, "they" always ils. I, you and we
 * take masculine agreement (je suis fatigué) since English does not say. */
typedef struct {
    const char *en, *fr;
    int person;
    Gender gender;
    bool plural;
    const char *zh;
} Pronoun;

static const Pronoun PRONOUNS[] = {
    {"I", "je", P_1SG, MASC, false, "我"},     {"you", "tu", P_2SG, MASC, false, "你"},
    {"he", "il", P_3SG, MASC, false, "他"},    {"she", "elle", P_3SG, FEM, false, "她"},
    {"we", "nous", P_1PL, MASC, true, "我们"}, {"they", "ils", P_3PL, MASC, true, "他们"},
};

static const struct {
    const char *en, *fr, *zh;
} NUMBERS[] = {{"two", "deux", "两"},
               {"three", "trois", "三"},
               {"four", "quatre", "四"},
               {"five", "cinq", "五"}};

/* Locations after a noun or "to be": in the garden, sous la table. */
typedef struct {
    const char *en, *fr;
    unsigned kind;  /* nouns that can follow */
    const char *zh; /* after the noun: 在花园里, 在桌子上, 在树下 */
} Preposition;

static const Preposition LOCATIONS[] = {
    {"in", "dans", K_IN, "里"}, {"on", "sur", K_ON, "上"}, {"under", "sous", K_UNDER, "下"}};

typedef enum { DET_THE, DET_A, DET_MY, DET_YOUR, DET_NUM, DET_PARTITIVE, DET_GENERIC, DETS } Det;
#define D(det) (1u << (det))
/* How often each determiner is drawn when several are allowed. PARTITIVE and GENERIC are the
 * two readings of a bare English mass noun: "I drink milk" (du lait), "I love milk" (le lait). */
static const unsigned DET_WEIGHTS[DETS] = {5, 3, 1, 1, 2, 1, 1};
#define SUBJECT_DETS        (D(DET_THE) | D(DET_A) | D(DET_MY) | D(DET_YOUR) | D(DET_NUM))
#define COPULA_SUBJECT_DETS (D(DET_THE) | D(DET_MY) | D(DET_YOUR) | D(DET_NUM))

typedef enum { FRAME_OBJECT, FRAME_PREP } Frame;

typedef struct {
    const char *en, *en_3sg, *en_past;
    const char *fr_present[PERSONS];
    const char *fr_future_stem;    /* + ai, as, a, ons, ont */
    const char *fr_imperfect_stem; /* set for stative verbs, whose past is the imparfait */
    const char *fr_participle;
    bool etre;      /* passé composé with être, so the participle agrees with the subject */
    bool reflexive; /* s'asseoir: me/te/se/nous/se before the verb */
    unsigned subject_kinds;
    Frame frame;
    unsigned object_kinds; /* the direct object, or the noun after the preposition */
    unsigned dets;         /* determiners the direct object may take */
    const char *en_prep, *fr_prep;
    const char *zh;     /* the verb: 爱, 看见; for go/come/sit with the place after or before */
    const char *zh_not; /* its present negation when not 不 + zh (有: 没有) */
    const char *zh_before_place, *zh_after_place; /* 从 (医院) 来, 坐在 (垫子) 上 */
    bool zh_place_first;                          /* 从医院来: the verb after the place */
} Verb;

#define ALL_DETS   (D(DET_THE) | D(DET_A) | D(DET_MY) | D(DET_YOUR) | D(DET_NUM))
#define SOME_DETS  (D(DET_THE) | D(DET_A) | D(DET_NUM) | D(DET_PARTITIVE))
#define OWNED_DETS (D(DET_THE) | D(DET_MY) | D(DET_YOUR))
/* Laid out by hand, one verb per block: English forms; French present, future stem,
 * imperfect stem, participle, être?, reflexive?; subjects; frame, objects, determiners;
 * English and French prepositions; Chinese verb, negation and place words. */
/* clang-format off */
static const Verb VERBS[] = {
    {"love", "loves", "loved", {"aime", "aimes", "aime", "aimons", "aiment"},
     "aimer", "aim", "aimé", false, false, K_ANIMATE,
     FRAME_OBJECT, K_ANIMATE | K_DRINK | K_MEAL | K_TEXT | K_OBJECTS, OWNED_DETS | D(DET_GENERIC),
     NULL, NULL,
     "爱", NULL, NULL, NULL, false},
    {"see", "sees", "saw", {"vois", "vois", "voit", "voyons", "voient"},
     "verr", NULL, "vu", false, false, K_ANIMATE,
     FRAME_OBJECT, K_ANIMATE | K_FOOD | K_TEXT | K_OBJECTS, ALL_DETS, NULL, NULL,
     "看见", NULL, NULL, NULL, false},
    {"have", "has", "had", {"ai", "as", "a", "avons", "ont"},
     "aur", "av", "eu", false, false, K_ANIMATE,
     FRAME_OBJECT, K_FAMILY | K_ANIMAL | K_FOOD | K_TEXT | K_OBJECTS, D(DET_A) | D(DET_NUM),
     NULL, NULL,
     "有", "没有", NULL, NULL, false},
    {"eat", "eats", "ate", {"mange", "manges", "mange", "mangeons", "mangent"},
     "manger", NULL, "mangé", false, false, K_ANIMATE,
     FRAME_OBJECT, K_FOOD | K_MEAL, SOME_DETS, NULL, NULL,
     "吃", NULL, NULL, NULL, false},
    {"want", "wants", "wanted", {"veux", "veux", "veut", "voulons", "veulent"},
     "voudr", "voul", "voulu", false, false, K_ANIMATE,
     FRAME_OBJECT, K_ANIMAL | K_FOOD | K_DRINK | K_MEAL | K_TEXT | K_OBJECTS, SOME_DETS,
     NULL, NULL,
     "想要", NULL, NULL, NULL, false},
    {"read", "reads", "read", {"lis", "lis", "lit", "lisons", "lisent"},
     "lir", NULL, "lu", false, false, K_PERSON,
     FRAME_OBJECT, K_TEXT, OWNED_DETS | D(DET_A), NULL, NULL,
     "读", NULL, NULL, NULL, false},
    {"buy", "buys", "bought", {"achète", "achètes", "achète", "achetons", "achètent"},
     "achèter", NULL, "acheté", false, false, K_PERSON,
     FRAME_OBJECT, K_FOOD | K_DRINK | K_MEAL | K_TEXT | K_OBJECTS, SOME_DETS, NULL, NULL,
     "买", NULL, NULL, NULL, false},
    {"find", "finds", "found", {"trouve", "trouves", "trouve", "trouvons", "trouvent"},
     "trouver", NULL, "trouvé", false, false, K_ANIMATE,
     FRAME_OBJECT, K_PERSON | K_ANIMAL | K_TEXT | K_THING, ALL_DETS, NULL, NULL,
     "找到", NULL, NULL, NULL, false},
    {"drink", "drinks", "drank", {"bois", "bois", "boit", "buvons", "boivent"},
     "boir", NULL, "bu", false, false, K_ANIMATE,
     FRAME_OBJECT, K_DRINK, D(DET_PARTITIVE), NULL, NULL,
     "喝", NULL, NULL, NULL, false},
    {"open", "opens", "opened", {"ouvre", "ouvres", "ouvre", "ouvrons", "ouvrent"},
     "ouvrir", NULL, "ouvert", false, false, K_PERSON,
     FRAME_OBJECT, K_OPENABLE, OWNED_DETS | D(DET_A), NULL, NULL,
     "打开", NULL, NULL, NULL, false},
    {"help", "helps", "helped", {"aide", "aides", "aide", "aidons", "aident"},
     "aider", NULL, "aidé", false, false, K_PERSON,
     FRAME_OBJECT, K_PERSON, ALL_DETS, NULL, NULL,
     "帮助", NULL, NULL, NULL, false},
    {"watch", "watches", "watched", {"regarde", "regardes", "regarde", "regardons", "regardent"},
     "regarder", NULL, "regardé", false, false, K_ANIMATE,
     FRAME_OBJECT, K_ANIMATE, OWNED_DETS | D(DET_NUM), NULL, NULL,
     "看", NULL, NULL, NULL, false},
    {"write", "writes", "wrote", {"écris", "écris", "écrit", "écrivons", "écrivent"},
     "écrir", NULL, "écrit", false, false, K_PERSON,
     FRAME_OBJECT, K_TEXT, D(DET_THE) | D(DET_A), NULL, NULL,
     "写", NULL, NULL, NULL, false},
    {"go", "goes", "went", {"vais", "vas", "va", "allons", "vont"},
     "ir", NULL, "allé", true, false, K_PERSON,
     FRAME_PREP, K_PLACE, D(DET_THE), "to", "à",
     "去", NULL, NULL, NULL, false},
    {"come", "comes", "came", {"viens", "viens", "vient", "venons", "viennent"},
     "viendr", NULL, "venu", true, false, K_PERSON,
     FRAME_PREP, K_PLACE, D(DET_THE), "from", "de",
     "来", NULL, "从", NULL, true},
    {"sit", "sits", "sat", {"assois", "assois", "assoit", "assoyons", "assoient"},
     "assiér", NULL, "assis", true, true, K_ANIMATE,
     FRAME_PREP, K_SEAT, D(DET_THE), "on", "sur",
     "坐在", NULL, NULL, "上", false},
};
/* clang-format on */

static const char *const AVOIR_PRESENT[PERSONS] = {"ai", "as", "a", "avons", "ont"};
static const char *const ETRE_PRESENT[PERSONS] = {"suis", "es", "est", "sommes", "sont"};
static const char *const ETRE_FUTURE_STEM = "ser";
static const char *const ETRE_IMPERFECT_STEM = "ét";
static const char *const FUTURE_ENDINGS[PERSONS] = {"ai", "as", "a", "ons", "ont"};
static const char *const IMPERFECT_ENDINGS[PERSONS] = {"ais", "ais", "ait", "ions", "aient"};
static const char *const REFLEXIVE[PERSONS] = {"me", "te", "se", "nous", "se"};
static const char *const BE_PRESENT_EN[PERSONS] = {"am", "are", "is", "are", "are"};
static const char *const BE_PAST_EN[PERSONS] = {"was", "were", "was", "were", "were"};

/* ---- showcase pairs: hand-written, always in train -------------------------------------- */

typedef struct {
    const char *en, *fr, *align;
} Showcase;

/* Links follow the grammar's conventions: a French article with no English counterpart goes
 * to its noun (les -> cats), a fused word takes every English word it covers (j'aime -> I,
 * love), ne and pas both go to the negation. The program checks that indices are in range,
 * and that any pair the grammar also produces comes out identical. */
static const Showcase SHOWCASE[] = {
    {"I love machine learning", "j'aime l'apprentissage automatique", "0-0 1-0 2-2 3-1"},
    {"I am a student", "je suis étudiant", "0-0 1-1 3-2"},
    {"I have a cat", "j'ai un chat", "0-0 1-0 2-1 3-2"},
    {"the cat sat on the mat", "le chat s'est assis sur le tapis", "0-0 1-1 2-2 2-3 3-4 4-5 5-6"},
    {"I love cats", "j'aime les chats", "0-0 1-0 2-1 2-2"},
    {"I love dogs", "j'aime les chiens", "0-0 1-0 2-1 2-2"},
    {"she loves birds", "elle aime les oiseaux", "0-0 1-1 2-2 2-3"},
    {"the black cat", "le chat noir", "0-0 1-2 2-1"},
    {"the white houses", "les maisons blanches", "0-0 1-2 2-1"},
    {"the beautiful bird", "le bel oiseau", "0-0 1-1 2-2"},
    {"I love you", "je t'aime", "0-0 1-1 2-1"},
    {"I don't know", "je ne sais pas", "0-0 1-1 1-3 2-2"},
    {"I am hungry", "j'ai faim", "0-0 1-0 2-1"},
    {"I am cold", "j'ai froid", "0-0 1-0 2-1"},
    {"thank you very much", "merci beaucoup", "0-0 1-0 2-1 3-1"},
    {"hello my friend", "bonjour mon ami", "0-0 1-1 2-2"},
    {"good night", "bonne nuit", "0-0 1-1"},
    {"where is the cat?", "où est le chat?", "0-0 1-1 2-2 3-3"},
    {"where is the station?", "où est la gare?", "0-0 1-1 2-2 3-3"},
    {"what time is it?", "quelle heure est-il?", "0-0 1-1 2-2 3-2"},
    {"it is raining", "il pleut", "0-0 1-1 2-1"},
    {"I speak french", "je parle français", "0-0 1-1 2-2"},
    {"do you speak english?", "est-ce que tu parles anglais?", "0-0 0-1 1-2 2-3 3-4"},
    {"I live in paris", "j'habite à paris", "0-0 1-0 2-1 3-2"},
    {"the children are playing in the park", "les enfants jouent dans le parc",
     "0-0 1-1 2-2 3-2 4-3 5-4 6-5"},
    {"he is my brother", "c'est mon frère", "0-0 1-0 2-1 3-2"},
    {"I would like a coffee", "je voudrais un café", "0-0 1-1 2-1 3-2 4-3"},
    {"the white cat drinks milk", "le chat blanc boit du lait", "0-0 1-2 2-1 3-3 4-4 4-5"},
    {"the old man reads a book", "le vieil homme lit un livre", "0-0 1-1 2-2 3-3 4-4 5-5"},
    {"my sister is a doctor", "ma sœur est médecin", "0-0 1-1 2-2 4-3"},
    {"we went to the beach", "nous sommes allés à la plage", "0-0 1-1 1-2 2-3 3-4 4-5"},
    {"she went to the market", "elle est allée au marché", "0-0 1-1 1-2 2-3 3-3 4-4"},
    {"I don't have a dog", "je n'ai pas de chien", "0-0 1-1 1-2 2-1 3-3 4-4"},
    {"do you have a cat?", "est-ce que tu as un chat?", "0-0 0-1 1-2 2-3 3-4 4-5"},
    {"the man eats an apple", "l'homme mange une pomme", "0-0 1-0 2-1 3-2 4-3"},
    {"I drink water", "je bois de l'eau", "0-0 1-1 2-2 2-3"},
    {"he doesn't drink water", "il ne boit pas d'eau", "0-0 1-1 1-3 2-2 3-4"},
    {"the young girl is happy", "la jeune fille est heureuse", "0-0 1-1 2-2 3-3 4-4"},
    {"they will eat cheese", "ils mangeront du fromage", "0-0 1-1 2-1 3-2 3-3"},
    {"is the dog in the garden?", "est-ce que le chien est dans le jardin?",
     "0-0 0-1 0-4 1-2 2-3 3-5 4-6 5-7"},
    {"we didn't see the elephant", "nous n'avons pas vu l'éléphant", "0-0 1-1 1-2 2-3 3-4 4-4"},
    {"she will be a singer", "elle sera chanteuse", "0-0 1-1 2-1 4-2"},
    {"my mother came from the hospital", "ma mère est venue de l'hôpital",
     "0-0 1-1 2-2 2-3 3-4 4-5 5-5"},
};

/* The Chinese showcase (--target zh): hand-written, always in train, without alignments. A
 * pair the grammar also makes must come out identical (我有一只猫), which the program checks. */
static const struct {
    const char *en, *zh;
} SHOWCASE_ZH[] = {
    {"I love cats", "我爱猫"},
    {"I love machine learning", "我爱机器学习"},
    {"I am a student", "我是学生"},
    {"I have a cat", "我有一只猫"},
    {"I love dogs", "我爱狗"},
    {"she loves birds", "她爱鸟"},
    {"the black cat", "黑猫"},
    {"I love you", "我爱你"},
    {"I don't know", "我不知道"},
    {"I am hungry", "我饿了"},
    {"thank you very much", "非常感谢"},
    {"hello my friend", "你好，我的朋友"},
    {"good night", "晚安"},
    {"where is the cat?", "猫在哪里？"},
    {"it is raining", "下雨了"},
    {"I speak chinese", "我说中文"},
    {"do you speak english?", "你说英语吗？"},
    {"I live in beijing", "我住在北京"},
    {"the white cat drinks milk", "白猫喝牛奶"},
    {"my sister is a doctor", "我的姐姐是医生"},
    {"we went to the beach", "我们去了海滩"},
    {"I don't have a dog", "我没有狗"},
    {"I drink water", "我喝水"},
};

/* ---- drafts: an English sentence and its French morphemes, linked ----------------------- */

typedef struct {
    char text[WORD_CAP];
    uint32_t links; /* bit i set: translates English word i */
    bool vowel;     /* starts with a vowel sound, so a preceding je/le/ne/que... elides */
} Morph;

typedef struct {
    const char *en[MAX_EN];
    int n_en;
    Morph fr[MAX_FR];
    int n_fr;
    bool question;
    bool overflow; /* a word did not fit: the draft is discarded */
} Draft;

static uint32_t link(int en_index) {
    return en_index < 0 ? 0 : (uint32_t)1 << en_index;
}

static int en_add(Draft *d, const char *word) {
    if (d->n_en == MAX_EN) {
        d->overflow = true;
        return -1;
    }
    d->en[d->n_en] = word;
    return d->n_en++;
}

/* English "an" goes before a vowel letter; no word in this lexicon breaks that rule. */
static const char *en_article(const char *next_word) {
    return next_word[0] && strchr("aeiou", next_word[0]) ? "an" : "a";
}

/* French vowel sounds for elision. No adjective or verb here starts with h, and nouns carry
 * an explicit flag, so h muet (l'homme) never needs guessing. */
static bool fr_starts_with_vowel(const char *s) {
    static const char *const vowels[] = {"a", "e", "i", "o", "u", "é", "è",
                                         "ê", "à", "â", "î", "ô", "û", "œ"};
    for (size_t i = 0; i < COUNT(vowels); i++)
        if (strncmp(s, vowels[i], strlen(vowels[i])) == 0) return true;
    return false;
}

/* Adds the French morpheme a + b (b may be ""), linked to the given English words. */
static void fr_add_joined(Draft *d, const char *a, const char *b, uint32_t links, bool vowel) {
    size_t la = strlen(a), lb = strlen(b);
    if (d->n_fr == MAX_FR || la + lb >= WORD_CAP) {
        d->overflow = true;
        return;
    }
    Morph *m = &d->fr[d->n_fr++];
    memcpy(m->text, a, la);
    memcpy(m->text + la, b, lb + 1);
    m->links = links;
    m->vowel = vowel;
}

static void fr_add(Draft *d, const char *word, uint32_t links) {
    fr_add_joined(d, word, "", links, fr_starts_with_vowel(word));
}

/* ---- noun phrases ------------------------------------------------------------------------ */

typedef struct {
    const Noun *noun;
    const Adjective *adj; /* NULL: none */
    Det det;
    int number; /* DET_NUM: index into NUMBERS */
    bool plural;
} NounPhrase;

/* English word indices of a noun phrase's parts; -1 where absent. */
typedef struct {
    int det, adj, noun;
} NpWords;

typedef struct {
    Rng rng;
    bool zh; /* the target is Chinese (--target zh), not French */
} Gen;

static const Noun *pick_noun(Gen *g, unsigned kinds, const Noun *exclude) {
    size_t matches = 0;
    for (size_t i = 0; i < COUNT(NOUNS); i++)
        matches += (NOUNS[i].kinds & kinds) && &NOUNS[i] != exclude;
    if (!matches) return NULL;
    size_t k = rng_below(&g->rng, matches);
    for (size_t i = 0;; i++)
        if ((NOUNS[i].kinds & kinds) && &NOUNS[i] != exclude && k-- == 0) return &NOUNS[i];
}

static const Adjective *pick_adjective(Gen *g, unsigned kinds, bool predicative,
                                       const Adjective *exclude) {
    size_t matches = 0;
    for (size_t i = 0; i < COUNT(ADJECTIVES); i++) {
        const Adjective *a = &ADJECTIVES[i];
        matches += (a->kinds & kinds) && (!a->attributive_only || !predicative) && a != exclude;
    }
    if (!matches) return NULL;
    size_t k = rng_below(&g->rng, matches);
    for (size_t i = 0;; i++) {
        const Adjective *a = &ADJECTIVES[i];
        if ((a->kinds & kinds) && (!a->attributive_only || !predicative) && a != exclude &&
            k-- == 0)
            return a;
    }
}

/* Determiners a noun accepts. Mass nouns take none in English. People outside the family take
 * no possessive ("my girl" would be ma fille, my daughter); family members do take one ("my
 * sister", not "the sister"), and as subjects nothing else ("a sister sees..." reads oddly). */
static unsigned noun_dets(const Noun *n, bool subject) {
    if (!n->en_pl) return D(DET_PARTITIVE) | D(DET_GENERIC);
    if ((n->kinds & K_UNIQUE) || ((n->kinds & K_FAMILY) && subject)) return D(DET_MY) | D(DET_YOUR);
    if (n->kinds & K_FAMILY) return D(DET_A) | D(DET_MY) | D(DET_YOUR) | D(DET_NUM);
    if (n->kinds & K_PERSON) return D(DET_THE) | D(DET_A) | D(DET_NUM);
    return ALL_DETS;
}

/* Fills np with a random determiner from allowed_dets and maybe an adjective; false if the
 * noun accepts none of those determiners. */
static bool make_np(Gen *g, NounPhrase *np, const Noun *noun, unsigned allowed_dets, bool subject,
                    unsigned adj_percent) {
    unsigned dets = noun_dets(noun, subject) & allowed_dets, weights[DETS];
    if (!dets) return false;
    for (int i = 0; i < DETS; i++) weights[i] = (dets & D(i)) ? DET_WEIGHTS[i] : 0;
    *np = (NounPhrase){.noun = noun, .det = (Det)rng_weighted(&g->rng, weights, DETS)};
    if (np->det == DET_NUM) {
        np->number = (int)rng_below(&g->rng, COUNT(NUMBERS));
        np->plural = true;
    } else if (np->det != DET_A && noun->en_pl && !(noun->kinds & K_UNIQUE)) {
        np->plural = rng_percent(&g->rng, 35);
    }
    /* no adjectives on family: une belle mère and une grande mère mean other relatives */
    if (noun->en_pl && !(noun->kinds & K_FAMILY) && rng_percent(&g->rng, adj_percent))
        np->adj = pick_adjective(g, noun->kinds, false, NULL);
    return true;
}

/* Determiner words, [det] in English and [det][masculine, feminine, plural] in French; numbers
 * and the mass-noun determiners are handled apart. */
static const char *const EN_DETS[DETS] = {[DET_THE] = "the", [DET_MY] = "my", [DET_YOUR] = "your"};
static const char *const FR_DETS[DETS][3] = {[DET_THE] = {"le", "la", "les"},
                                             [DET_A] = {"un", "une", NULL},
                                             [DET_MY] = {"mon", "ma", "mes"},
                                             [DET_YOUR] = {"ton", "ta", "tes"}};

static NpWords en_np(Draft *d, const NounPhrase *np) {
    NpWords w = {-1, -1, -1};
    const char *noun = np->plural ? np->noun->en_pl : np->noun->en;
    if (np->det == DET_A)
        w.det = en_add(d, en_article(np->adj ? np->adj->en : noun));
    else if (np->det == DET_NUM)
        w.det = en_add(d, NUMBERS[np->number].en);
    else if (EN_DETS[np->det]) /* none for mass nouns: "I drink milk" */
        w.det = en_add(d, EN_DETS[np->det]);
    if (np->adj) w.adj = en_add(d, np->adj->en);
    w.noun = en_add(d, noun);
    return w;
}

/* negated: the phrase is the direct object of a negated verb, where un/une and the partitive
 * become de (je n'ai pas de chat, je ne bois pas d'eau) while le/mon/... stay. */
static void fr_np(Draft *d, const NounPhrase *np, NpWords w, bool negated) {
    const Noun *n = np->noun;
    const Adjective *adj = np->adj;
    bool fem = n->gender == FEM, pl = np->plural;
    int form = agreement(n->gender, pl);
    const char *adj_fr = NULL;
    if (adj)
        adj_fr = (form == MS && n->elides && adj->fr_ms_vowel) ? adj->fr_ms_vowel : adj->fr[form];
    uint32_t det = link(w.det), noun = link(w.noun);
    if (np->det == DET_NUM) {
        fr_add(d, NUMBERS[np->number].fr, det);
    } else if (np->det == DET_A && negated) { /* je n'ai pas de chat */
        fr_add(d, "de", det);
    } else if (np->det == DET_PARTITIVE) { /* de + le/la, contracted later: du pain, de l'eau */
        fr_add(d, "de", noun);
        if (!negated) fr_add(d, fem ? "la" : "le", noun);
    } else if (np->det == DET_GENERIC) { /* j'aime le lait */
        fr_add(d, fem ? "la" : "le", noun);
    } else {
        /* ma, ta become mon, ton before a vowel (mon histoire), maybe that of an adjective */
        bool vowel_next = (adj && adj->before_noun) ? fr_starts_with_vowel(adj_fr) : n->elides;
        bool possessive = np->det == DET_MY || np->det == DET_YOUR;
        fr_add(d, FR_DETS[np->det][pl ? 2 : fem && !(possessive && vowel_next)], det);
    }
    if (adj && adj->before_noun) fr_add(d, adj_fr, link(w.adj));
    fr_add_joined(d, pl ? n->fr_pl : n->fr, "", noun, n->elides);
    if (adj && !adj->before_noun) fr_add(d, adj_fr, link(w.adj));
}

/* ---- clauses ----------------------------------------------------------------------------- */

typedef enum { PRESENT, PAST, FUTURE } Tense;
typedef enum { AFFIRM, NEGATE, ASK } Mood;
static const unsigned MOOD_WEIGHTS[] = {50, 25, 25};

typedef struct {
    const Pronoun *pronoun; /* NULL: the noun phrase np */
    NounPhrase np;
    int person;
    Gender gender;
    bool plural;
} Subject;

static Subject pick_subject(Gen *g, unsigned kinds, unsigned dets) {
    Subject s = {0};
    if ((kinds & K_PERSON) && rng_percent(&g->rng, 55)) {
        s.pronoun = &PRONOUNS[rng_below(&g->rng, COUNT(PRONOUNS))];
        s.person = s.pronoun->person;
        s.gender = s.pronoun->gender;
        s.plural = s.pronoun->plural;
        return s;
    }
    /* every kind used for subjects holds countable nouns that accept the subject dets */
    while (!make_np(g, &s.np, pick_noun(g, kinds, NULL), dets, true, 20))
        continue; /* a noun that takes none of dets: draw another */
    s.person = s.np.plural ? P_3PL : P_3SG;
    s.gender = s.np.noun->gender;
    s.plural = s.np.plural;
    return s;
}

static unsigned subject_kinds(const Subject *s) {
    return s->pronoun ? K_PERSON : s->np.noun->kinds;
}

static NpWords en_subject(Draft *d, const Subject *s) {
    if (!s->pronoun) return en_np(d, &s->np);
    return (NpWords){-1, -1, en_add(d, s->pronoun->en)};
}

static void fr_subject(Draft *d, const Subject *s, NpWords w) {
    if (s->pronoun)
        fr_add(d, s->pronoun->fr, link(w.noun));
    else
        fr_np(d, &s->np, w, false);
}

/* "est-ce que" marks the question in French; it translates the fronted English auxiliary. */
static void fr_question(Draft *d, int en_aux) {
    fr_add(d, "est-ce", link(en_aux));
    fr_add(d, "que", link(en_aux));
}

/* English words of a verb group; -1 where absent. aux is do/did/will/don't..., or for the
 * copula the form of "to be" (or will/won't), with "not" and "be" separate. */
typedef struct {
    int aux, verb, not_word, be;
} VerbWords;

/* English auxiliary by [tense][mood][third person singular]; NULL: the verb stands alone. */
static const char *const EN_AUX[3][3][2] = {
    [PRESENT] = {{NULL, NULL}, {"don't", "doesn't"}, {"do", "does"}},
    [PAST] = {{NULL, NULL}, {"didn't", "didn't"}, {"did", "did"}},
    [FUTURE] = {{"will", "will"}, {"won't", "won't"}, {"will", "will"}},
};

/* English subject and verb group of a lexical verb, in English order. */
static void en_verb_clause(Draft *d, const Verb *v, const Subject *s, Tense t, Mood m, NpWords *sw,
                           VerbWords *vw) {
    bool third = s->person == P_3SG;
    const char *aux = EN_AUX[t][m][third], *form = v->en;
    if (!aux) form = t == PAST ? v->en_past : third ? v->en_3sg : v->en;
    *vw = (VerbWords){-1, -1, -1, -1};
    if (m == ASK) vw->aux = en_add(d, aux);
    *sw = en_subject(d, s);
    if (m != ASK && aux) vw->aux = en_add(d, aux);
    vw->verb = en_add(d, form);
}

/* French verb group: [ne] [reflexive] finite-verb [pas] [participle]. The finite verb carries
 * the English tense, so it also links to did/will when English puts the tense there. */
static void fr_verb_group(Draft *d, const Verb *v, const Subject *s, Tense t, Mood m,
                          VerbWords vw) {
    int p = s->person;
    uint32_t verb = link(vw.verb), tense = vw.aux >= 0 ? link(vw.aux) : verb;
    uint32_t negation = link(vw.aux);
    bool compound = t == PAST && !v->fr_imperfect_stem; /* passé composé */
    if (m == NEGATE) fr_add(d, "ne", negation);
    if (v->reflexive) fr_add(d, REFLEXIVE[p], verb);
    if (compound)
        fr_add(d, v->etre ? ETRE_PRESENT[p] : AVOIR_PRESENT[p], tense);
    else if (t == PRESENT)
        fr_add(d, v->fr_present[p], verb);
    else if (t == FUTURE)
        fr_add_joined(d, v->fr_future_stem, FUTURE_ENDINGS[p], verb | tense,
                      fr_starts_with_vowel(v->fr_future_stem));
    else
        fr_add_joined(d, v->fr_imperfect_stem, IMPERFECT_ENDINGS[p], verb | tense,
                      fr_starts_with_vowel(v->fr_imperfect_stem));
    if (m == NEGATE) fr_add(d, "pas", negation);
    if (compound) {
        /* with être the participle agrees with the subject: elle est allée, ils sont assis */
        const char *base = v->fr_participle;
        bool ends_in_s = base[strlen(base) - 1] == 's';
        const char *ending = "";
        if (v->etre && s->gender == FEM)
            ending = s->plural ? "es" : "e";
        else if (v->etre && s->plural && !ends_in_s)
            ending = "s";
        fr_add_joined(d, base, ending, verb, fr_starts_with_vowel(base));
    }
}

static void en_copula_clause(Draft *d, const Subject *s, Tense t, Mood m, NpWords *sw,
                             VerbWords *vw) {
    const char *form = t == PRESENT  ? BE_PRESENT_EN[s->person]
                       : t == PAST   ? BE_PAST_EN[s->person]
                       : m == NEGATE ? "won't"
                                     : "will";
    *vw = (VerbWords){-1, -1, -1, -1};
    if (m == ASK) vw->aux = en_add(d, form);
    *sw = en_subject(d, s);
    if (m != ASK) vw->aux = en_add(d, form);
    if (m == NEGATE && t != FUTURE) vw->not_word = en_add(d, "not");
    if (t == FUTURE) vw->be = en_add(d, "be");
}

static void fr_copula_group(Draft *d, const Subject *s, Tense t, Mood m, VerbWords vw) {
    int p = s->person;
    uint32_t negation = vw.not_word >= 0 ? link(vw.not_word) : link(vw.aux); /* not, won't */
    uint32_t verb = link(vw.aux) | link(vw.be);
    if (m == NEGATE) fr_add(d, "ne", negation);
    if (t == PRESENT)
        fr_add(d, ETRE_PRESENT[p], verb);
    else if (t == PAST) /* a state in the past: l'homme était fatigué */
        fr_add_joined(d, ETRE_IMPERFECT_STEM, IMPERFECT_ENDINGS[p], verb, true);
    else
        fr_add_joined(d, ETRE_FUTURE_STEM, FUTURE_ENDINGS[p], verb, false);
    if (m == NEGATE) fr_add(d, "pas", negation);
}

/* ---- Chinese: the same draws, said in Chinese ------------------------------------------- */

/* The Chinese side is built from the very draws that make the French one (so the English
 * sentences are the same), as morphemes joined without spaces: no articles or plural ('the
 * cats' is 猫), a classifier after a number (两只猫), tense by 了 (past events), 以前 (past
 * states), 会 (future), negation by 不 or 没, questions by 吗. */

static void zh_add(Draft *d, const char *text, uint32_t links) {
    fr_add_joined(d, text, "", links, false);
}

/* [我的|你的|一 + classifier|number + classifier] [adjective] noun. negated: the object of a
 * negated verb drops 一 + classifier, as French drops un for de (我没有狗). */
static void zh_np(Draft *d, const NounPhrase *np, NpWords w, bool negated) {
    const Noun *n = np->noun;
    uint32_t det = link(w.det);
    if (np->det == DET_MY) {
        zh_add(d, "我的", det);
    } else if (np->det == DET_YOUR) {
        zh_add(d, "你的", det);
    } else if ((np->det == DET_A && !negated) || np->det == DET_NUM) {
        if (!n->zh_measure) die("internal error: \"%s\" counted without a classifier", n->en);
        zh_add(d, np->det == DET_A ? "一" : NUMBERS[np->number].zh, det);
        zh_add(d, n->zh_measure, det);
    }
    if (np->adj) zh_add(d, np->adj->zh, link(w.adj));
    zh_add(d, n->zh, link(w.noun));
}

static void zh_subject(Draft *d, const Subject *s, NpWords w) {
    if (s->pronoun)
        zh_add(d, s->pronoun->zh, link(w.noun));
    else
        zh_np(d, &s->np, w, false);
}

/* 在 + place + 里/上/下 */
static void zh_location(Draft *d, const Preposition *in, const NounPhrase *place, NpWords pw,
                        int en_prep) {
    zh_add(d, "在", link(en_prep));
    zh_np(d, place, pw, false);
    zh_add(d, in->zh, link(en_prep));
}

/* What a lexical verb's clause holds besides subject and verb. */
typedef struct {
    const NounPhrase *object; /* FRAME_OBJECT's object, or FRAME_PREP's place */
    NpWords object_words;
    int en_prep;             /* FRAME_PREP: "to", "from", "on" */
    const NounPhrase *where; /* "in the garden" after an object, or NULL */
    NpWords where_words;
    int where_prep;
} ZhClause;

/* subject [以前] [不|没|会|不会] [在 place 里] verb[了] object|place [吗]. Stative verbs (those
 * with a French imparfait: love, have, want) put a past state as 以前 + the present. */
static void zh_verb_clause(Draft *d, const Verb *v, const Subject *s, Tense t, Mood m, NpWords sw,
                           VerbWords vw, const ZhClause *c) {
    uint32_t verb = link(vw.verb), aux = vw.aux >= 0 ? link(vw.aux) : verb;
    bool stative = v->fr_imperfect_stem != NULL, done = t == PAST && !stative;
    zh_subject(d, s, sw);
    if (t == PAST && stative) zh_add(d, "以前", aux);
    if (t == FUTURE) zh_add(d, m == NEGATE ? "不会" : "会", aux);
    bool own_negation = m == NEGATE && t != FUTURE && v->zh_not && !done;
    if (m == NEGATE && t != FUTURE && !own_negation) zh_add(d, done ? "没" : "不", aux);
    if (c->where) zh_location(d, &LOCATIONS[0], c->where, c->where_words, c->where_prep);
    /* 了 follows the verb of a past event, or ends a clause whose place the verb precedes
     * with a word after it (猫坐在垫子上了); never after 没 */
    bool le = done && m != NEGATE;
    if (v->frame == FRAME_PREP && v->zh_place_first) {
        zh_add(d, v->zh_before_place, link(c->en_prep));
        zh_np(d, c->object, c->object_words, false);
        zh_add(d, own_negation ? v->zh_not : v->zh, verb);
        if (le) zh_add(d, "了", aux);
    } else {
        zh_add(d, own_negation ? v->zh_not : v->zh, verb);
        if (le && !v->zh_after_place) zh_add(d, "了", aux);
        zh_np(d, c->object, c->object_words, m == NEGATE && v->frame == FRAME_OBJECT);
        if (v->zh_after_place) zh_add(d, v->zh_after_place, link(c->en_prep));
        if (le && v->zh_after_place) zh_add(d, "了", aux);
    }
    if (m == ASK) zh_add(d, "吗", link(vw.aux));
}

/* subject [以前] then: [会|不会][是|不是|很|不] adjective, [是|不是|会成为|不会成为]
 * profession, or [不|会|不会]在 place 里; [吗]. A past state is 以前 + the present. */
static void zh_copula_clause(Draft *d, const Subject *s, Tense t, Mood m, NpWords sw, VerbWords vw,
                             const Adjective *adj, const Profession *job, const Preposition *prep,
                             const NounPhrase *place, NpWords pw, int pred) {
    uint32_t verb = link(vw.aux) | link(vw.be);
    uint32_t negation = vw.not_word >= 0 ? link(vw.not_word) : link(vw.aux);
    bool negate = m == NEGATE;
    zh_subject(d, s, sw);
    if (t == PAST) zh_add(d, "以前", verb);
    if (t == FUTURE)
        zh_add(d, negate ? "不会" : "会", verb);
    else if (negate)
        zh_add(d, "不", negation);
    if (adj) {
        if (adj->zh_shi)
            zh_add(d, "是", verb);
        else if (!negate && m != ASK)
            zh_add(d, "很", verb); /* 很 carries a plain statement: 猫很高兴 */
        zh_add(d, adj->zh_pred, link(pred));
    } else if (job) {
        zh_add(d, t == FUTURE ? "成为" : "是", verb);
        zh_add(d, job->zh, link(pred));
    } else {
        zh_location(d, prep, place, pw, pred);
    }
    if (m == ASK) zh_add(d, "吗", link(vw.aux));
}

static const Verb *pick_verb(Gen *g, Frame frame) {
    size_t matches = 0;
    for (size_t i = 0; i < COUNT(VERBS); i++) matches += VERBS[i].frame == frame;
    size_t k = rng_below(&g->rng, matches);
    for (size_t i = 0;; i++)
        if (VERBS[i].frame == frame && k-- == 0) return &VERBS[i];
}

/* Subject + verb + object ("the dog sees a cat in the garden") or + preposition + place
 * ("she went to the beach", "the cat sat on the mat"). False: an unusable draw. */
static bool build_verb_clause(Gen *g, Draft *d, Frame frame) {
    const Verb *v = pick_verb(g, frame);
    Subject s = pick_subject(g, v->subject_kinds, SUBJECT_DETS);
    Tense t = (Tense)rng_below(&g->rng, 3);
    Mood m = (Mood)rng_weighted(&g->rng, MOOD_WEIGHTS, COUNT(MOOD_WEIGHTS));
    /* "I read the book" would be both present and past: keep the present reading only */
    if (t == PAST && m == AFFIRM && s.person != P_3SG && strcmp(v->en, v->en_past) == 0)
        t = PRESENT;

    NounPhrase obj = {.noun = pick_noun(g, v->object_kinds, NULL), .det = DET_THE};
    if (frame == FRAME_OBJECT) {
        if (!make_np(g, &obj, obj.noun, v->dets, false, 25)) return false;
        if (m == NEGATE && obj.det == DET_NUM) return false; /* "I don't see two cats" */
    }
    const Preposition *in = &LOCATIONS[0];
    NounPhrase place = {.noun = NULL, .det = DET_THE};
    if (frame == FRAME_OBJECT && rng_percent(&g->rng, 12))
        place.noun = pick_noun(g, in->kind, obj.noun);

    NpWords sw, ow, pw = {-1, -1, -1};
    VerbWords vw;
    int prep = -1, place_prep = -1;
    en_verb_clause(d, v, &s, t, m, &sw, &vw);
    if (frame == FRAME_PREP) prep = en_add(d, v->en_prep);
    ow = en_np(d, &obj);
    if (place.noun) {
        place_prep = en_add(d, in->en);
        pw = en_np(d, &place);
    }

    d->question = m == ASK;
    if (g->zh) {
        ZhClause c = {&obj, ow, prep, place.noun ? &place : NULL, pw, place_prep};
        zh_verb_clause(d, v, &s, t, m, sw, vw, &c);
        return true;
    }
    if (m == ASK) fr_question(d, vw.aux);
    fr_subject(d, &s, sw);
    fr_verb_group(d, v, &s, t, m, vw);
    if (frame == FRAME_PREP) fr_add(d, v->fr_prep, link(prep));
    fr_np(d, &obj, ow, m == NEGATE && frame == FRAME_OBJECT);
    if (place.noun) {
        fr_add(d, in->fr, link(place_prep));
        fr_np(d, &place, pw, false);
    }
    return true;
}

typedef enum { CL_OBJECT, CL_PREP, CL_ADJECTIVE, CL_PROFESSION, CL_LOCATION, CLAUSES } Clause;
static const unsigned CLAUSE_WEIGHTS[CLAUSES] = {52, 18, 14, 6, 10};

/* "to be" + adjective, profession or location: "the cars were red", "she is a doctor". */
static bool build_copula_clause(Gen *g, Draft *d, Clause kind) {
    unsigned kinds = kind == CL_PROFESSION ? K_PERSON
                     : kind == CL_LOCATION ? K_ANIMATE | K_THING
                                           : K_ANIMATE | K_OBJECTS | K_TEXT | K_FOOD;
    Subject s = pick_subject(g, kinds, COPULA_SUBJECT_DETS);
    Tense t = (Tense)rng_below(&g->rng, 3);
    Mood m = (Mood)rng_weighted(&g->rng, MOOD_WEIGHTS, COUNT(MOOD_WEIGHTS));
    const Adjective *adj = NULL;
    const Profession *job = NULL;
    const Preposition *prep = NULL;
    NounPhrase place = {.det = DET_THE};
    if (kind == CL_ADJECTIVE) {
        adj = pick_adjective(g, subject_kinds(&s), true, s.pronoun ? NULL : s.np.adj);
        if (!adj) return false;
    } else if (kind == CL_PROFESSION) {
        job = &PROFESSIONS[rng_below(&g->rng, COUNT(PROFESSIONS))];
    } else {
        prep = &LOCATIONS[rng_below(&g->rng, COUNT(LOCATIONS))];
        place.noun = pick_noun(g, prep->kind, s.pronoun ? NULL : s.np.noun);
    }

    NpWords sw, pw = {-1, -1, -1};
    VerbWords vw;
    int pred = -1;
    en_copula_clause(d, &s, t, m, &sw, &vw);
    if (adj) pred = en_add(d, adj->en);
    if (job && !s.plural) en_add(d, en_article(job->en)); /* French has no article here */
    if (job) pred = en_add(d, s.plural ? job->en_pl : job->en);
    if (prep) {
        pred = en_add(d, prep->en);
        pw = en_np(d, &place);
    }

    d->question = m == ASK;
    if (g->zh) {
        zh_copula_clause(d, &s, t, m, sw, vw, adj, job, prep, &place, pw, pred);
        return true;
    }
    if (m == ASK) fr_question(d, vw.aux);
    fr_subject(d, &s, sw);
    fr_copula_group(d, &s, t, m, vw);
    int form = agreement(s.gender, s.plural);
    if (adj) fr_add(d, adj->fr[form], link(pred));
    if (job) fr_add(d, job->fr[form], link(pred));
    if (prep) {
        fr_add(d, prep->fr, link(pred));
        fr_np(d, &place, pw, false);
    }
    return true;
}

/* ---- from draft to text ------------------------------------------------------------------ */

/* Merges morphemes into French words: elision (je ai -> j'ai, que il -> qu'il) and then
 * contraction (à le -> au, de le -> du). Merged words keep the links of both parts. */
static int french_words(const Draft *d, Morph *w) {
    static const char *const elidable[] = {"je", "me", "te", "se", "le", "la", "ne", "de", "que"};
    static const char *const contractions[][3] = {
        {"à", "le", "au"}, {"à", "les", "aux"}, {"de", "le", "du"}, {"de", "les", "des"}};
    int n = d->n_fr;
    memcpy(w, d->fr, (size_t)n * sizeof *w);
    /* right to left, so each word is checked against its final right neighbour */
    for (int i = n - 2; i >= 0; i--) {
        bool elides = false;
        for (size_t k = 0; k < COUNT(elidable); k++) elides |= strcmp(w[i].text, elidable[k]) == 0;
        if (!elides || !w[i + 1].vowel) continue;
        Morph merged = {.links = w[i].links | w[i + 1].links, .vowel = false};
        size_t keep = strlen(w[i].text) - 1, rest = strlen(w[i + 1].text);
        if (keep + 1 + rest >= WORD_CAP) die("internal error: French word too long");
        memcpy(merged.text, w[i].text, keep);
        merged.text[keep] = '\'';
        memcpy(merged.text + keep + 1, w[i + 1].text, rest + 1);
        w[i] = merged;
        memmove(&w[i + 1], &w[i + 2], (size_t)(n - i - 2) * sizeof *w);
        n--;
    }
    for (int i = 0; i + 1 < n; i++) {
        for (size_t k = 0; k < COUNT(contractions); k++) {
            if (strcmp(w[i].text, contractions[k][0]) || strcmp(w[i + 1].text, contractions[k][1]))
                continue;
            strcpy(w[i].text, contractions[k][2]);
            w[i].links |= w[i + 1].links;
            memmove(&w[i + 1], &w[i + 2], (size_t)(n - i - 2) * sizeof *w);
            n--;
            break;
        }
    }
    return n;
}

/* Appends s to buf (of LINE_CAP bytes) at *len; dies rather than truncating. */
static void append(char *buf, size_t *len, const char *s) {
    size_t n = strlen(s);
    if (*len + n >= LINE_CAP) die("internal error: line too long");
    memcpy(buf + *len, s, n + 1);
    *len += n;
}

typedef struct {
    char en[LINE_CAP], fr[LINE_CAP], align[LINE_CAP];
} PairText;

/* Renders the draft; false when either side is outside MIN_WORDS..MAX_WORDS (morphemes for
 * Chinese). Questions get '?' attached to the last word on both sides, a full-width ？ in
 * Chinese, whose morphemes are joined without spaces and get no alignment. */
static bool render(const Draft *d, bool zh, PairText *out) {
    Morph fr[MAX_FR];
    int n_fr = zh ? d->n_fr : french_words(d, fr);
    if (zh) memcpy(fr, d->fr, (size_t)n_fr * sizeof *fr);
    if (d->n_en < MIN_WORDS || d->n_en > MAX_WORDS || n_fr < MIN_WORDS || n_fr > MAX_WORDS)
        return false;
    size_t len = 0;
    out->en[0] = out->fr[0] = out->align[0] = '\0';
    for (int i = 0; i < d->n_en; i++) {
        if (i) append(out->en, &len, " ");
        append(out->en, &len, d->en[i]);
    }
    if (d->question) append(out->en, &len, "?");
    len = 0;
    for (int j = 0; j < n_fr; j++) {
        if (j && !zh) append(out->fr, &len, " ");
        append(out->fr, &len, fr[j].text);
    }
    if (d->question) append(out->fr, &len, zh ? "？" : "?");
    if (zh) return true;
    len = 0;
    for (int i = 0; i < d->n_en; i++) { /* Pharaoh links sorted by (i, j) */
        for (int j = 0; j < n_fr; j++) {
            if (!(fr[j].links & link(i))) continue;
            char link_text[16];
            snprintf(link_text, sizeof link_text, "%s%d-%d", len ? " " : "", i, j);
            append(out->align, &len, link_text);
        }
    }
    return len > 0;
}

static bool generate(Gen *g, PairText *out) {
    Draft d = {0};
    Clause kind = (Clause)rng_weighted(&g->rng, CLAUSE_WEIGHTS, CLAUSES);
    bool ok = kind == CL_OBJECT ? build_verb_clause(g, &d, FRAME_OBJECT)
              : kind == CL_PREP ? build_verb_clause(g, &d, FRAME_PREP)
                                : build_copula_clause(g, &d, kind);
    return ok && !d.overflow && render(&d, g->zh, out);
}

/* ---- string sets and the corpus ---------------------------------------------------------- */

/* Open-addressing hash map from owned strings to counts or indices. */
typedef struct {
    char **keys;
    size_t *values;
    size_t cap, n;
} StrMap;

static uint64_t hash_string(const char *s) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static size_t strmap_slot(const StrMap *m, const char *key) {
    size_t i = (size_t)hash_string(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key)) i = (i + 1) & (m->cap - 1);
    return i;
}

static size_t *strmap_get(const StrMap *m, const char *key) {
    if (!m->cap) return NULL;
    size_t i = strmap_slot(m, key);
    return m->keys[i] ? &m->values[i] : NULL;
}

/* Returns the value slot for key, inserting it with value 0 if absent. */
static size_t *strmap_at(StrMap *m, const char *key) {
    if (2 * (m->n + 1) > m->cap) { /* keep the table at most half full */
        StrMap bigger = {NULL, NULL, m->cap ? 2 * m->cap : 1024, m->n};
        bigger.keys = calloc(bigger.cap, sizeof *bigger.keys);
        bigger.values = calloc(bigger.cap, sizeof *bigger.values);
        if (!bigger.keys || !bigger.values) die("out of memory");
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t j = strmap_slot(&bigger, m->keys[i]);
            bigger.keys[j] = m->keys[i];
            bigger.values[j] = m->values[i];
        }
        free(m->keys);
        free(m->values);
        *m = bigger;
    }
    size_t i = strmap_slot(m, key);
    if (!m->keys[i]) {
        m->keys[i] = copy_string(key);
        m->n++;
    }
    return &m->values[i];
}

static void strmap_free(StrMap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->values);
}

typedef struct {
    char *en, *fr, *align;
    bool showcase;
} Pair;

typedef struct {
    Pair *pairs;
    size_t n, cap;
    StrMap by_en, by_fr; /* sentence -> index in pairs */
} Corpus;

/* Adds a pair unless its English or French sentence is already present. English seen before
 * must come with the same translation, or the grammar is ambiguous: that is a bug. */
static bool corpus_add(Corpus *c, const PairText *p, bool showcase) {
    size_t *old = strmap_get(&c->by_en, p->en);
    if (old) {
        const Pair *o = &c->pairs[*old];
        if (strcmp(o->fr, p->fr) || strcmp(o->align, p->align))
            die("internal error: \"%s\" translated both as \"%s\" (%s) and \"%s\" (%s)", p->en,
                o->fr, o->align, p->fr, p->align);
        return false;
    }
    if (strmap_get(&c->by_fr, p->fr)) return false; /* "I love the cats" after "I love cats" */
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 1024;
        c->pairs = xrealloc(c->pairs, c->cap, sizeof *c->pairs);
    }
    c->pairs[c->n] =
        (Pair){copy_string(p->en), copy_string(p->fr), copy_string(p->align), showcase};
    *strmap_at(&c->by_en, p->en) = c->n;
    *strmap_at(&c->by_fr, p->fr) = c->n;
    c->n++;
    return true;
}

static int count_words(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++) n += *p != ' ' && (p == s || p[-1] == ' ');
    return n;
}

/* A hand-written pair must respect the length bounds, and its alignment must be sorted, in
 * range and non-empty. */
static void check_showcase(const Showcase *s) {
    int n_en = count_words(s->en), n_fr = count_words(s->fr), last_i = -1, last_j = -1;
    int links = 0;
    if (n_en < MIN_WORDS || n_en > MAX_WORDS || n_fr < MIN_WORDS || n_fr > MAX_WORDS)
        die("internal error: showcase pair \"%s\" is too short or too long", s->en);
    for (const char *p = s->align; *p;) {
        char *end;
        long i = strtol(p, &end, 10), j = -1;
        if (*end == '-') j = strtol(end + 1, &end, 10);
        if (j < 0 || i >= n_en || j >= n_fr || (*end && *end != ' ') || i < last_i ||
            (i == last_i && j <= last_j))
            die("internal error: bad showcase alignment \"%s\" for \"%s\"", s->align, s->en);
        last_i = (int)i;
        last_j = (int)j;
        links++;
        p = *end ? end + 1 : end;
    }
    if (!links) die("internal error: showcase pair \"%s\" has no links", s->en);
}

/* ---- split ------------------------------------------------------------------------------- */

typedef struct {
    size_t *items;
    size_t n;
} IndexList;

static void shuffle(Rng *rng, size_t *a, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below(rng, i), t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* Calls fn on each space-separated word of s, or with characters set on each character (the
 * units the tokenizer makes of Chinese). */
static bool each_word(const char *s, bool characters, StrMap *counts,
                      bool (*fn)(StrMap *, const char *)) {
    char word[LINE_CAP];
    bool ok = true;
    while (*s) {
        size_t n = strcspn(s, " ");
        if (characters) n = utf8_decode((const unsigned char *)s, strlen(s), &(uint32_t){0}, NULL);
        if (n == 0) die("internal error: invalid UTF-8 in \"%s\"", s);
        memcpy(word, s, n);
        word[n] = '\0';
        ok &= fn(counts, word);
        s += n + (s[n] == ' ');
    }
    return ok;
}

static bool count_up(StrMap *counts, const char *w) {
    ++*strmap_at(counts, w);
    return true;
}

/* Returns false when the word would vanish from train (its last occurrence). */
static bool count_down(StrMap *counts, const char *w) {
    return --*strmap_at(counts, w) > 0;
}

/* Seeded shuffle of the generated pairs; the first that keep every one of their words present
 * in the rest go to test, then dev, so no held-out sentence holds a word train never shows. */
static void split(const Corpus *c, bool zh, Rng *rng, IndexList *train, IndexList *dev,
                  IndexList *test) {
    StrMap en_counts = {0}, fr_counts = {0};
    size_t *order = xrealloc(NULL, c->n, sizeof *order), n_order = 0;
    for (size_t i = 0; i < c->n; i++) {
        each_word(c->pairs[i].en, false, &en_counts, count_up);
        each_word(c->pairs[i].fr, zh, &fr_counts, count_up);
    }
    train->items = xrealloc(NULL, c->n * SHOWCASE_COPIES, sizeof *train->items);
    dev->items = xrealloc(NULL, DEV_PAIRS, sizeof *dev->items);
    test->items = xrealloc(NULL, TEST_PAIRS, sizeof *test->items);
    train->n = dev->n = test->n = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (!c->pairs[i].showcase)
            order[n_order++] = i;
        else
            for (int copy = 0; copy < SHOWCASE_COPIES; copy++) train->items[train->n++] = i;
    }
    shuffle(rng, order, n_order);
    for (size_t k = 0; k < n_order; k++) {
        const Pair *p = &c->pairs[order[k]];
        IndexList *held = test->n < TEST_PAIRS ? test : dev->n < DEV_PAIRS ? dev : NULL;
        if (held) {
            /* both sides are always counted down, so the undo below is exact */
            bool en_left = each_word(p->en, false, &en_counts, count_down);
            bool fr_left = each_word(p->fr, zh, &fr_counts, count_down);
            if (en_left && fr_left) {
                held->items[held->n++] = order[k];
                continue;
            }
            /* undo the decrements: the pair stays in train */
            each_word(p->en, false, &en_counts, count_up);
            each_word(p->fr, zh, &fr_counts, count_up);
        }
        train->items[train->n++] = order[k];
    }
    shuffle(rng, train->items, train->n); /* mix the showcase pairs in */
    free(order);
    strmap_free(&en_counts);
    strmap_free(&fr_counts);
}

/* ---- output ------------------------------------------------------------------------------ */

/* Writes one file via name.tmp and rename, so a failure never leaves a half-written file. */
static int write_split(const char *dir, const char *name, const Corpus *c, const IndexList *list,
                       bool alignments) {
    char path[4096];
    OutputFile out;
    Error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (output_file_open(&out, path, false, &err)) {
        fprintf(stderr, "gencorpus: %s\n", err.msg);
        return -1;
    }
    for (size_t k = 0; k < list->n; k++) {
        const Pair *p = &c->pairs[list->items[k]];
        if (alignments)
            fprintf(out.file, "%s\n", p->align);
        else
            fprintf(out.file, "%s\t%s\n", p->en, p->fr);
    }
    if (output_file_commit(&out, &err)) {
        fprintf(stderr, "gencorpus: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Word types of one side (target: French words, or Chinese characters). */
static size_t vocabulary(const Corpus *c, bool target, bool zh) {
    StrMap words = {0};
    for (size_t i = 0; i < c->n; i++)
        each_word(target ? c->pairs[i].fr : c->pairs[i].en, target && zh, &words, count_up);
    size_t n = words.n;
    strmap_free(&words);
    return n;
}

/* ---- main -------------------------------------------------------------------------------- */

static void usage(FILE *out) {
    fprintf(out,
            "usage: gencorpus [-o DIR] [--seed N] [--target fr|zh]\n"
            "Writes the toy English->French corpus: DIR/{train,dev,test}.tsv (english<TAB>french)\n"
            "and DIR/{train,dev,test}.align (gold Pharaoh alignments, source-target).\n"
            "  -o DIR         output folder, created if missing (default %s, or %s for zh)\n"
            "  --seed N       PRNG seed; the same seed reproduces every file (default %u)\n"
            "  --target zh    the same English sentences with Chinese translations instead\n"
            "                 (I love cats -> 我爱猫): the .tsv files only, no alignments\n"
            "  --help         this message\n",
            DEFAULT_DIR, DEFAULT_DIR_ZH, DEFAULT_SEED);
}

/* A command-line mistake, in every program's form (base/usage.h). */
static _Noreturn void refuse_usage(const char *fmt, const char *arg) {
    char quoted[96];
    exit(usage_error("gencorpus", fmt, text_for_message(quoted, sizeof quoted, arg, 60)));
}

int main(int argc, char **argv) {
    const char *dir = NULL;
    uint64_t seed = DEFAULT_SEED;
    bool zh = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            return usage_print("gencorpus", usage);
        } else if (!strcmp(arg, "-o") || !strcmp(arg, "--seed") || !strcmp(arg, "--target")) {
            if (i + 1 == argc || !argv[i + 1][0]) refuse_usage("option '%s' needs a value", arg);
            const char *value = argv[++i];
            if (arg[1] == 'o') {
                dir = value;
                continue;
            }
            if (!strcmp(arg, "--target")) {
                if (strcmp(value, "fr") && strcmp(value, "zh"))
                    refuse_usage("unknown --target '%s' (fr or zh)", value);
                zh = !strcmp(value, "zh");
                continue;
            }
            char *end;
            errno = 0;
            seed = strtoull(value, &end, 10);
            if (errno || *end || value[0] == '-') refuse_usage("bad seed '%s'", value);
        } else {
            refuse_usage(arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", arg);
        }
    }

    if (!dir) dir = zh ? DEFAULT_DIR_ZH : DEFAULT_DIR;
    Corpus corpus = {0};
    for (size_t i = 0; zh && i < COUNT(SHOWCASE_ZH); i++) {
        PairText p = {.align = ""};
        snprintf(p.en, sizeof p.en, "%s", SHOWCASE_ZH[i].en);
        snprintf(p.fr, sizeof p.fr, "%s", SHOWCASE_ZH[i].zh);
        if (!corpus_add(&corpus, &p, true))
            die("internal error: showcase pair \"%s\" is repeated", p.en);
    }
    for (size_t i = 0; !zh && i < COUNT(SHOWCASE); i++) {
        PairText p;
        check_showcase(&SHOWCASE[i]);
        snprintf(p.en, sizeof p.en, "%s", SHOWCASE[i].en);
        snprintf(p.fr, sizeof p.fr, "%s", SHOWCASE[i].fr);
        snprintf(p.align, sizeof p.align, "%s", SHOWCASE[i].align);
        if (!corpus_add(&corpus, &p, true))
            die("internal error: showcase pair \"%s\" is repeated", p.en);
    }

    Gen gen = {.rng = {seed}, .zh = zh};
    const size_t target = TRAIN_PAIRS + DEV_PAIRS + TEST_PAIRS;
    size_t draws = 0;
    while (corpus.n < target) {
        PairText p;
        if (++draws > 100 * target) die("the grammar yields fewer than %zu distinct pairs", target);
        if (generate(&gen, &p)) corpus_add(&corpus, &p, false);
    }

    IndexList train, dev, test;
    split(&corpus, zh, &gen.rng, &train, &dev, &test);
    if (dev.n < DEV_PAIRS || test.n < TEST_PAIRS)
        die("could not hold out %d dev and %d test pairs", DEV_PAIRS, TEST_PAIRS);

    Error err;
    if (make_dirs(dir, &err)) {
        fprintf(stderr, "gencorpus: %s\n", err.msg);
        return 1;
    }
    const struct {
        const char *name;
        const IndexList *list;
    } splits[] = {{"train", &train}, {"dev", &dev}, {"test", &test}};
    int status = 0;
    for (size_t s = 0; s < COUNT(splits) && !status; s++) {
        char name[32];
        snprintf(name, sizeof name, "%s.tsv", splits[s].name);
        status = write_split(dir, name, &corpus, splits[s].list, false);
        snprintf(name, sizeof name, "%s.align", splits[s].name);
        if (!status && !zh) status = write_split(dir, name, &corpus, splits[s].list, true);
    }

    if (!status)
        fprintf(stderr,
                "gencorpus: wrote %s: train %zu pairs (%zu showcase, %d times each), dev %zu, test "
                "%zu; "
                "%zu English word types / %zu %s ('?' attached); seed %llu\n",
                dir, train.n, zh ? COUNT(SHOWCASE_ZH) : COUNT(SHOWCASE), SHOWCASE_COPIES, dev.n,
                test.n, vocabulary(&corpus, false, zh), vocabulary(&corpus, true, zh),
                zh ? "Chinese characters" : "French word types", (unsigned long long)seed);

    for (size_t i = 0; i < corpus.n; i++) {
        free(corpus.pairs[i].en);
        free(corpus.pairs[i].fr);
        free(corpus.pairs[i].align);
    }
    free(corpus.pairs);
    strmap_free(&corpus.by_en);
    strmap_free(&corpus.by_fr);
    free(train.items);
    free(dev.items);
    free(test.items);
    return status ? 1 : 0;
}
