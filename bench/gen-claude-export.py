# gen-claude-export.py MB FILE: writes a Claude conversations.json of about MB megabytes of
# random words (4-16 messages of 50-1200 words per conversation), for measuring large exports.
import json, random, sys, uuid
random.seed(1)
target = int(sys.argv[1]) * 1000000
words = "the a memory recall vector index search sqlite export claude conversation chunk server stream piece batch manifest hash token model embed query result file vault sweep remote local".split()
def para(n): return " ".join(random.choice(words) for _ in range(n))
out = open(sys.argv[2], "w")
out.write("[")
size = 1; i = 0
while size < target:
    msgs = []
    parent = "00000000-0000-4000-8000-000000000000"
    for j in range(random.randint(4, 16)):
        u = str(uuid.UUID(int=random.getrandbits(128)))
        msgs.append({"uuid": u, "parent_message_uuid": parent, "sender": "human" if j % 2 == 0 else "assistant",
                     "text": para(random.randint(50, 1200)), "content": [], "attachments": [], "files": []})
        parent = u
    c = {"uuid": str(uuid.UUID(int=random.getrandbits(128))), "name": "conv %d %s" % (i, para(4)),
         "created_at": "2025-%02d-%02dT10:00:00Z" % (1 + i % 12, 1 + i % 28), "updated_at": "2025-01-01T10:00:00Z",
         "current_leaf_message_uuid": parent, "chat_messages": msgs}
    s = ("," if i else "") + json.dumps(c)
    out.write(s); size += len(s); i += 1
out.write("]"); out.close()
print(i, size)
