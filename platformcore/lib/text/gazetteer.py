"""Small word lists the offline extractors type names with (no model, no download).

A name found here gets its type whatever the sentence says; the lists hold well-known names
only, so that an unknown name is typed by its role in the sentence instead ("works at X":
an organisation, "lives in X": a location)."""

from __future__ import annotations


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


TECHNOLOGIES = words(
    """
    python django postgresql postgres pgvector mysql sqlite redis mongodb react vue angular
    svelte javascript typescript node.js nodejs java kotlin swift rust golang go c++ c# ruby
    rails php docker kubernetes k8s terraform ansible aws gcp azure linux git github gitlab
    graphql fastapi flask celery kafka rabbitmq nginx elasticsearch pytorch tensorflow numpy
    pandas vim emacs vscode neovim bash zsh macos windows ios android tailwind webpack vite
    jest pytest llama chatgpt claude grpc html css scala haskell elixir erlang clojure perl
    lua dart flutter jupyter spark hadoop airflow dbt snowflake bigquery redshift tableau
    excel figma sketch jira confluence notion slack zoom postman helm jenkins circleci
    prometheus grafana datadog sentry supabase firebase heroku vercel netlify cassandra
    dynamodb neo4j sqlalchemy spring .net laravel symfony nextjs next.js nuxt remix deno bun
    webassembly wasm opencv scikit-learn sklearn keras jax matlab r julia fortran cobol
    unity unreal blender photoshop illustrator intellij pycharm xcode eclipse ubuntu debian
    fedora arch centos openshift istio envoy consul vault nomad pulumi cloudflare lambda
    s3 ec2 sqs kinesis elasticache memcached solr lucene opensearch clickhouse duckdb
    polars mlflow kubeflow ray dask fastify express nestjs htmx jquery bootstrap sass
    """
)
ORGANIZATIONS = words("""
    google microsoft apple amazon meta facebook netflix ibm intel nvidia oracle salesforce
    adobe uber airbnb spotify stripe openai anthropic tesla twitter linkedin mozilla samsung
    sony acme deepmind shopify atlassian dropbox siemens bosch sap volkswagen bmw mercedes
    toyota honda nokia ericsson philips unilever nestle shell bp accenture deloitte pwc kpmg
    mckinsey goldman jpmorgan paypal visa mastercard ebay alibaba tencent baidu huawei
    xiaomi lenovo dell hp cisco vmware redhat canonical databricks cloudflare twilio
    zendesk hubspot squarespace wix pinterest snapchat tiktok bytedance reddit discord
    yahoo booking.com zalando klarna revolut n26 monzo wise spacex boeing airbus lufthansa
    ikea lego adidas nike pfizer novartis roche bayer basf nasa cern unicef
    """) | {"acme corp", "red hat", "goldman sachs", "jp morgan", "morgan stanley", "deutsche bank"}
LOCATIONS = words("""
    paris london berlin tokyo seattle boston chicago austin toronto sydney madrid rome
    amsterdam dublin lisbon munich zurich singapore beijing shanghai mumbai bangalore delhi
    france germany spain italy japan china india canada usa uk europe brazil mexico
    australia california texas sweden norway poland ireland portugal netherlands belgium
    austria switzerland denmark finland greece turkey russia ukraine egypt kenya nigeria
    argentina chile peru colombia korea vietnam thailand indonesia philippines israel
    stockholm oslo copenhagen helsinki vienna prague budapest warsaw brussels barcelona
    milan naples athens istanbul moscow kyiv cairo nairobi lagos dubai seoul osaka kyoto
    hamburg frankfurt cologne stuttgart lyon marseille manchester edinburgh glasgow
    vancouver montreal denver portland miami atlanta dallas houston phoenix philadelphia
    oakland brooklyn manhattan melbourne auckland wellington lima bogota montevideo
    africa asia america scotland england wales bavaria ohio florida oregon washington
    """) | {
    "new york",
    "san francisco",
    "los angeles",
    "san diego",
    "new jersey",
    "hong kong",
    "united states",
    "united kingdom",
    "new zealand",
    "south africa",
    "buenos aires",
    "rio de janeiro",
    "sao paulo",
    "mexico city",
    "tel aviv",
    "cape town",
    "silicon valley",
    "bay area",
}
ORG_SUFFIXES = words("""
    inc corp corporation ltd llc gmbh ag sa plc labs university bank company foundation
    institute group technologies systems solutions software consulting partners agency
    college school hospital clinic ministry
    """)
# Technologies that are also everyday words ("go", "swift", "slack"): found only when
# capitalised or after a verb that takes a technology ("uses go").
COMMON_WORD_TECHNOLOGIES = words("""
    r ray lambda express spring bun remix sketch unity excel notion zoom vault consul envoy
    arch swift rust slack dart julia ruby spark helm bootstrap jest vite flask sass polars
    lua next.js deno ios go
    """)
# Common given names (English and a few other languages): a lone capitalised word that is
# one of these is a person unless the sentence says otherwise.
FIRST_NAMES = words("""
    aaron adam adrian ahmed aisha alan albert alex alexander alexandra alice alicia amanda
    amelia amir amy ana andrea andrew angela anna anne anthony antonio arjun ashley ava ben
    benjamin beth bob brian bruno carla carlos carmen carol caroline catherine charles
    charlie charlotte chen chloe chris christian christina christopher claire clara daniel
    david deborah diana diego dmitri dan dave dennis diane donald dylan edward elena eli
    elizabeth ella emily emma eric erik ethan eva evelyn fatima felix fernando fiona frank
    gabriel george grace greg hana hannah harry hassan helen henry hiroshi hugo ian igor
    irene isaac isabel isabella ivan jack jacob james jamie jane janet jason javier jean
    jeff jennifer jessica jim joan joe john jonathan jordan jorge jose joseph josh julia
    julian julie karen kate katie kelly ken kevin kim laura lauren leo li liam linda lisa
    liu lucas lucy luis luke maria mark marta martin mary matt matthew max maya mei melissa
    mia michael michelle miguel mike mohammed monica nadia nancy natalie nathan nicole nina
    noah nora olga oliver olivia omar oscar pablo patricia paul pedro peter priya rachel
    rahul raj ravi rebecca richard rita robert rosa ryan sam samuel sandra sara sarah
    sean sergei simon sofia sophia sophie stephen steve steven susan tanya thomas tim tom
    tony valentina victor victoria vincent wang wei will william yuki yusuf zara zoe
    melanie jon nate ted fred greta hans heidi ingrid jan jens jonas klaus lars lena lukas
    marco mario matteo nils paolo pierre rafael sven wolfgang yara yann ahmad ali anil
    deepak kiran neha pooja sanjay sunil vikram aiko haruto kenji sakura takeshi yui
    """)


# the last word of a group's name says what it is ("the Platform team", "the Atlas project")
GROUP_KINDS = {
    **dict.fromkeys(
        words(
            "team group department division unit office branch squad guild chapter "
            "committee council board lab labs club"
        ),
        "organization",
    ),
    **dict.fromkeys(words("project initiative program programme"), "project"),
}
# Nationalities and languages: capitalised, but adjectives or skills, not things named
NATIONALITIES = words("""
    american british english french german spanish italian portuguese dutch swedish
    norwegian danish finnish polish russian ukrainian greek turkish chinese japanese korean
    indian mexican brazilian canadian australian irish scottish welsh swiss austrian belgian
    arabic hebrew hindi mandarin cantonese vietnamese thai persian african european asian
    latin
    """)


def name_kind(name: str) -> str | None:
    """The type a well-known name has whatever the sentence says (None if not known)."""
    key = name.casefold()
    if " " in key and key.rsplit(" ", 1)[-1] in GROUP_KINDS:
        return GROUP_KINDS[key.rsplit(" ", 1)[-1]]
    if key in TECHNOLOGIES:
        return "technology"
    if key in ORGANIZATIONS or key.rsplit(" ", 1)[-1].strip(".") in ORG_SUFFIXES:
        return "organization"
    if key in LOCATIONS:
        return "location"
    if key.split(" ", 1)[0] in FIRST_NAMES:
        return "person"
    return None
